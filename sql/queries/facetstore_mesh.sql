-- Each study's MeSH descriptors (app.study_mesh, every source) for the in-process engine's therapeutic areas.
-- Parameters: none. Output: i (study row number in nct_id byte order), descriptor_ui.
WITH r AS MATERIALIZED (
    SELECT nct_id, (row_number() OVER (ORDER BY nct_id COLLATE "C") - 1)::int AS i FROM app.study_facets
)
SELECT DISTINCT r.i, sm.descriptor_ui
FROM app.study_mesh sm JOIN r ON r.nct_id = sm.nct_id
