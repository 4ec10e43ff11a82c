-- Facet: studies per study_type. Needs CTE m(nct_id). Output: value, n.
SELECT s.study_type AS value, count(*) AS n
FROM m JOIN ctgov.studies s ON s.nct_id = m.nct_id
GROUP BY s.study_type
