-- Facet: top lead sponsors. Needs CTE m(nct_id). Parameters: :top. Output: value, n.
SELECT sp.name AS value, count(*) AS n
FROM m JOIN ctgov.sponsors sp ON sp.nct_id = m.nct_id AND sp.lead_or_collaborator = 'lead'
GROUP BY sp.name
ORDER BY n DESC, sp.name COLLATE "C"
LIMIT :top
