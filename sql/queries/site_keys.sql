-- The grouping key of every facility row (services/data/sitename.py's rule in SQL; tests compare the two):
-- name, city and country folded (accents, case, apostrophes, "&", punctuation), initials joined, abbreviations
-- written out, a leading "The" dropped, joined by ' | '. Params: none. Output: facility_id, nct_id, group_key (NULL:
-- a facility without a name). The Sites page's SQL engine reads it for the matching trials' facilities;
-- refresh_site_groups.sql for all of them.
SELECT f.id AS facility_id, f.nct_id,
       CASE WHEN n.name_key <> '' THEN n.name_key || ' | ' || n.city_key || ' | ' || p.country END AS group_key
FROM ctgov.facilities f
CROSS JOIN LATERAL (
    SELECT btrim(split_part(x.t, chr(1), 1), ' ') AS name, btrim(split_part(x.t, chr(1), 2), ' ') AS city,
           btrim(split_part(x.t, chr(1), 3), ' ') AS country
    FROM (SELECT regexp_replace(replace(translate(
              concat_ws(chr(1), COALESCE(f.name, ''), COALESCE(f.city, ''), COALESCE(f.country, '')),
              'ÀÁÂÃÄÅàáâãäåÇçÈÉÊËèéêëÌÍÎÏìíîïÑñÒÓÔÕÖØòóôõöøÙÚÛÜùúûüÝýÿABCDEFGHIJKLMNOPQRSTUVWXYZ''’‘´`',
              'aaaaaaaaaaaacceeeeeeeeiiiiiiiinnoooooooooooouuuuuuuuyyyabcdefghijklmnopqrstuvwxyz'), '&', ' and '),
              '[-\t\n\v\f\r !"#$%()*+,./:;<=>?@\[\\\]^_{|}~“”–—·\u00a0]+', ' ', 'g') AS t OFFSET 0) x  -- OFFSET 0: folded once, not once per split_part
) p
CROSS JOIN LATERAL (
    SELECT btrim(regexp_replace(replace(replace(replace(replace(replace(regexp_replace(' ' || p.name || ' ', '(?<= [a-z]) (?=[a-z] )', '', 'g'), ' univ ', ' university '), ' hosp ', ' hospital '), ' ctr ', ' center '), ' cntr ', ' center '), ' centre ', ' center '), '^ the ', ' '), ' ') AS name_key,
           btrim(replace(' ' || p.city || ' ', ' st ', ' saint '), ' ') AS city_key
) n
