-- Facet: top reasons given for stopping (terminated, withdrawn, suspended). Needs CTE m(nct_id).
-- Parameters: :top. Output: value, n.
SELECT lower(btrim(s.why_stopped)) AS value, count(*) AS n
FROM m JOIN ctgov.studies s ON s.nct_id = m.nct_id
WHERE s.why_stopped IS NOT NULL AND btrim(s.why_stopped) <> ''
GROUP BY 1
ORDER BY n DESC, lower(btrim(s.why_stopped)) COLLATE "C"
LIMIT :top
