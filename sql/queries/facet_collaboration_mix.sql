-- Facet: studies by how many collaborators the lead sponsor has. Needs CTE m(nct_id). Output: value (bucket), n.
SELECT CASE WHEN k.k = 0 THEN 0 WHEN k.k = 1 THEN 1 WHEN k.k <= 3 THEN 2 ELSE 3 END AS value, count(*) AS n
FROM (SELECT m.nct_id, count(c.nct_id) AS k
      FROM m LEFT JOIN ctgov.sponsors c ON c.nct_id = m.nct_id AND c.lead_or_collaborator = 'collaborator'
      GROUP BY m.nct_id) k
GROUP BY 1
