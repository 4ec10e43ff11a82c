-- The grouping key of every facility row (services/data/sitename.py's rule in SQL; tests compare the two):
-- name, city, state and country folded (accents, case, apostrophes, "&", punctuation), initials joined, abbreviations
-- written out, a sponsor's site code, a leading number and a trailing department dropped, a leading "The" dropped,
-- a reviewed spelling read as its institution (data/sites/institution_aliases.csv, written in by
-- sitename.site_keys_sql at /*ALIASES*/), joined by ' | '; the state only in the United States (a postal code read
-- as its name, as sitename._US_STATES), and only when given; the country as its one name (see below). A
-- placeholder name (data/sites/placeholder_names.csv, at /*PLACEHOLDERS*/) has no key. Read it through sitename.site_keys_sql(), never load_sql. Params: none.
-- Output: facility_id, nct_id, group_key (NULL: a facility without a name or with a placeholder name). The Sites
-- page's SQL engine reads it for the matching trials' facilities; refresh_site_groups.sql for all of them.
SELECT f.id AS facility_id, f.nct_id,
       CASE WHEN n.plain_key <> '' AND n.padded !~ /*PLACEHOLDERS*/
            THEN COALESCE(al.institution_key, n.plain_key) || ' | ' || n.city_key || ' | '
            || CASE WHEN COALESCE(cn.name, p.country) = 'united states' AND p.state <> ''
                    THEN COALESCE(st.name, p.state) || ' | ' ELSE '' END
            || COALESCE(cn.name, p.country) END AS group_key
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
    SELECT btrim(regexp_replace(CASE WHEN btrim(c.stripped, ' ') <> '' THEN c.stripped ELSE c.padded END,
                                '^ the ', ' '), ' ') AS plain_key, c.padded, c.city_key
    FROM (SELECT w.padded, w.city_key,
                 regexp_replace(regexp_replace(regexp_replace(w.padded, '^ [0-9]+(?= )', ''),
                                               ' (site number|site no|site|id) [0-9]+(?= )', '', 'g'),
                                ' (dept|department) of .*$', ' ') AS stripped
          FROM (SELECT replace(replace(replace(replace(replace(regexp_replace(' ' || p.name || ' ', '(?<= [a-z]) (?=[a-z] )', '', 'g'), ' univ ', ' university '), ' hosp ', ' hospital '), ' ctr ', ' center '), ' cntr ', ' center '), ' centre ', ' center ') AS padded,
                       btrim(replace(' ' || p.city || ' ', ' st ', ' saint '), ' ') AS city_key OFFSET 0) w) c
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
-- A country's other spellings (sitename.country_keys, from data/geo/countries.csv, written in at /*COUNTRIES*/):
-- "korea republic of" is "south korea", one country per ISO code.
LEFT JOIN (VALUES /*COUNTRIES*/) cn(spelling, name) ON cn.spelling = p.country
-- Reviewed spellings of one institution (sitename.institution_aliases): (name key, city or '' for any) → its key.
LEFT JOIN LATERAL (
    SELECT a.institution_key FROM (VALUES /*ALIASES*/) a(name_key, city_key, institution_key)
    WHERE a.name_key = n.plain_key AND (a.city_key = n.city_key OR a.city_key = '')
    ORDER BY a.city_key DESC LIMIT 1
) al ON TRUE
