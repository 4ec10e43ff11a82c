-- Facet: studies with a site in each US state. Needs CTE m(nct_id). Output: value, n.
SELECT f.state AS value, count(DISTINCT f.nct_id) AS n
FROM m JOIN ctgov.facilities f ON f.nct_id = m.nct_id
WHERE f.country = 'United States' AND f.state IS NOT NULL
GROUP BY f.state
ORDER BY n DESC, value
