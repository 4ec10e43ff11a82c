-- Facet: top lead sponsor → collaborator pairs. Needs CTE m(nct_id). Parameters: :top. Output: value, collaborator, n.
SELECT l.name AS value, c.name AS collaborator, count(DISTINCT l.nct_id) AS n
FROM m JOIN ctgov.sponsors l ON l.nct_id = m.nct_id AND l.lead_or_collaborator = 'lead'
JOIN ctgov.sponsors c ON c.nct_id = m.nct_id AND c.lead_or_collaborator = 'collaborator'
GROUP BY l.name, c.name
ORDER BY n DESC, l.name COLLATE "C", c.name COLLATE "C"
LIMIT :top
