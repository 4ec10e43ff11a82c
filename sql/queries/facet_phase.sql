-- Facet: studies per raw phase value (split and normalised in Python). Needs CTE m(nct_id). Output: value, n.
SELECT s.phase AS value, count(*) AS n
FROM m JOIN ctgov.studies s ON s.nct_id = m.nct_id
GROUP BY s.phase
