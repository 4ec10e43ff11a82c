-- Facet: studies per overall_status (normalised in Python). Needs CTE m(nct_id). Output: value, n.
SELECT s.overall_status AS value, count(*) AS n
FROM m JOIN ctgov.studies s ON s.nct_id = m.nct_id
GROUP BY s.overall_status
