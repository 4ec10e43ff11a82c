-- Condition rows for the in-process facet engine (facet_conditions_mesh.sql's input): each study's own MeSH
-- descriptors (app.study_mesh without the ancestors) named by app.mesh_descriptors. Parameters: none.
-- Output: i (study row number in nct_id byte order), value (the heading, lower case), label (the heading).
WITH r AS MATERIALIZED (
    SELECT nct_id, (row_number() OVER (ORDER BY nct_id COLLATE "C") - 1)::int AS i FROM app.study_facets
)
SELECT DISTINCT r.i, lower(d.name) AS value, d.name AS label
FROM app.study_mesh sm JOIN r ON r.nct_id = sm.nct_id
JOIN app.mesh_descriptors d ON d.descriptor_ui = sm.descriptor_ui
WHERE sm.source <> 'mesh-ancestor'
