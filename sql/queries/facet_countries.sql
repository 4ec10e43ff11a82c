-- Facet: studies per country (removed countries excluded). Needs CTE m(nct_id). Parameters: :top. Output: value, n.
SELECT co.name AS value, count(DISTINCT co.nct_id) AS n
FROM m JOIN ctgov.countries co ON co.nct_id = m.nct_id AND co.removed IS NOT TRUE
GROUP BY co.name
ORDER BY n DESC, co.name COLLATE "C"
LIMIT :top
