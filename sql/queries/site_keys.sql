-- The grouping key of every facility row (services/data/sitename.py's rule in SQL; tests compare the two):
-- name, city, state and country folded (accents, case, apostrophes, "&", punctuation), initials joined, abbreviations
-- written out, a leading "The" dropped, joined by ' | '; the state only in the United States (a postal code read as
-- its name, as sitename._US_STATES), and only when given. Params: none. Output: facility_id, nct_id, group_key (NULL:
-- a facility without a name). The Sites page's SQL engine reads it for the matching trials' facilities;
-- refresh_site_groups.sql for all of them.
SELECT f.id AS facility_id, f.nct_id,
       CASE WHEN n.name_key <> '' THEN n.name_key || ' | ' || n.city_key || ' | '
            || CASE WHEN p.country = 'united states' AND p.state <> '' THEN COALESCE(st.name, p.state) || ' | ' ELSE '' END
            || p.country END AS group_key
FROM ctgov.facilities f
CROSS JOIN LATERAL (
    SELECT btrim(split_part(x.t, chr(1), 1), ' ') AS name, btrim(split_part(x.t, chr(1), 2), ' ') AS city,
           btrim(split_part(x.t, chr(1), 3), ' ') AS country, btrim(split_part(x.t, chr(1), 4), ' ') AS state
    FROM (SELECT regexp_replace(replace(translate(
              concat_ws(chr(1), COALESCE(f.name, ''), COALESCE(f.city, ''), COALESCE(f.country, ''), COALESCE(f.state, '')),
              'ÀÁÂÃÄÅàáâãäåÇçÈÉÊËèéêëÌÍÎÏìíîïÑñÒÓÔÕÖØòóôõöøÙÚÛÜùúûüÝýÿABCDEFGHIJKLMNOPQRSTUVWXYZ''’‘´`',
              'aaaaaaaaaaaacceeeeeeeeiiiiiiiinnoooooooooooouuuuuuuuyyyabcdefghijklmnopqrstuvwxyz'), '&', ' and '),
              '[-\t\n\v\f\r !"#$%()*+,./:;<=>?@\[\\\]^_{|}~“”–—·\u00a0]+', ' ', 'g') AS t OFFSET 0) x  -- OFFSET 0: folded once, not once per split_part
) p
CROSS JOIN LATERAL (
    SELECT btrim(regexp_replace(replace(replace(replace(replace(replace(regexp_replace(' ' || p.name || ' ', '(?<= [a-z]) (?=[a-z] )', '', 'g'), ' univ ', ' university '), ' hosp ', ' hospital '), ' ctr ', ' center '), ' cntr ', ' center '), ' centre ', ' center '), '^ the ', ' '), ' ') AS name_key,
           btrim(replace(' ' || p.city || ' ', ' st ', ' saint '), ' ') AS city_key
) n
-- US postal codes (data/geo/us_states.csv, folded): a code is the same state as its name.
LEFT JOIN (VALUES
    ('al', 'alabama'), ('ak', 'alaska'), ('az', 'arizona'), ('ar', 'arkansas'), ('ca', 'california'),
    ('co', 'colorado'), ('ct', 'connecticut'), ('de', 'delaware'), ('dc', 'district of columbia'),
    ('fl', 'florida'), ('ga', 'georgia'), ('hi', 'hawaii'), ('id', 'idaho'), ('il', 'illinois'), ('in', 'indiana'),
    ('ia', 'iowa'), ('ks', 'kansas'), ('ky', 'kentucky'), ('la', 'louisiana'), ('me', 'maine'), ('md', 'maryland'),
    ('ma', 'massachusetts'), ('mi', 'michigan'), ('mn', 'minnesota'), ('ms', 'mississippi'), ('mo', 'missouri'),
    ('mt', 'montana'), ('ne', 'nebraska'), ('nv', 'nevada'), ('nh', 'new hampshire'), ('nj', 'new jersey'),
    ('nm', 'new mexico'), ('ny', 'new york'), ('nc', 'north carolina'), ('nd', 'north dakota'), ('oh', 'ohio'),
    ('ok', 'oklahoma'), ('or', 'oregon'), ('pa', 'pennsylvania'), ('pr', 'puerto rico'), ('ri', 'rhode island'),
    ('sc', 'south carolina'), ('sd', 'south dakota'), ('tn', 'tennessee'), ('tx', 'texas'), ('ut', 'utah'),
    ('vt', 'vermont'), ('va', 'virginia'), ('wa', 'washington'), ('wv', 'west virginia'), ('wi', 'wisconsin'),
    ('wy', 'wyoming')
) st(code, name) ON st.code = p.state
