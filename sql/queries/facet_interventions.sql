-- Facet: top interventions by name (case-folded). Needs CTE m(nct_id). Parameters: :top. Output: value, label, n.
SELECT lower(i.name) AS value, mode() WITHIN GROUP (ORDER BY i.name COLLATE "C") AS label, count(DISTINCT i.nct_id) AS n
FROM m JOIN ctgov.interventions i ON i.nct_id = m.nct_id
WHERE i.name IS NOT NULL AND lower(i.name) NOT IN ('placebo', 'placebos')
GROUP BY lower(i.name)
ORDER BY n DESC, lower(i.name) COLLATE "C"
LIMIT :top
