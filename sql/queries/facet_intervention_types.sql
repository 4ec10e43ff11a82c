-- Facet: studies per intervention type (a study counts once per type). Needs CTE m(nct_id). Output: value, n.
SELECT i.intervention_type AS value, count(DISTINCT i.nct_id) AS n
FROM m JOIN ctgov.interventions i ON i.nct_id = m.nct_id
WHERE i.intervention_type IS NOT NULL
GROUP BY i.intervention_type
