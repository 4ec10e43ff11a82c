-- Facet: studies per sex eligibility (gender). Needs CTE m(nct_id). Output: value, n.
SELECT e.gender AS value, count(*) AS n
FROM m LEFT JOIN ctgov.eligibilities e ON e.nct_id = m.nct_id
GROUP BY e.gender
