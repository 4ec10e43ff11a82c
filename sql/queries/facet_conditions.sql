-- Facet: top conditions as MeSH headings on AACT's base tables (a database without app.study_mesh; with it,
-- facet_conditions_mesh.sql): the studies' own MeSH headings (browse_conditions, mesh-list). Needs CTE m(nct_id).
-- Parameters: :top. Output: value (the heading, lower case), label (the heading), n (distinct studies).
SELECT b.downcase_mesh_term AS value, mode() WITHIN GROUP (ORDER BY b.mesh_term COLLATE "C") AS label,
       count(DISTINCT b.nct_id) AS n
FROM m JOIN ctgov.browse_conditions b ON b.nct_id = m.nct_id AND b.mesh_type = 'mesh-list'
GROUP BY b.downcase_mesh_term
ORDER BY n DESC, b.downcase_mesh_term COLLATE "C"
LIMIT :top
