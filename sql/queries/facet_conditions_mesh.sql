-- Facet: top conditions as MeSH headings (issue 38): each study's own descriptors (its MeSH headings and
-- its condition names resolved to MeSH; not the ancestors) from ctgov.study_mesh_terms (app.study_mesh by
-- heading, a view the SQL console reads too), so "Alzheimer Disease" and "Alzheimer's Disease" are one bar.
-- Needs CTE m(nct_id). Parameters: :top. Output: value (the heading, lower case), label (the heading),
-- n (distinct studies).
SELECT lower(t.mesh_term) AS value, min(t.mesh_term) AS label, count(DISTINCT t.nct_id) AS n
FROM m JOIN ctgov.study_mesh_terms t ON t.nct_id = m.nct_id AND t.source <> 'mesh-ancestor'
GROUP BY lower(t.mesh_term)
ORDER BY n DESC, lower(t.mesh_term) COLLATE "C"
LIMIT :top
