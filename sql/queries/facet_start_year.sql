-- Facet: studies per start year. Needs CTE m(nct_id). Output: value (year), n.
SELECT extract(year FROM s.start_date)::int AS value, count(*) AS n
FROM m JOIN ctgov.studies s ON s.nct_id = m.nct_id
WHERE s.start_date IS NOT NULL
GROUP BY 1
ORDER BY 1
