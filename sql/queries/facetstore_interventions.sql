-- Intervention rows for the in-process facet engine (the facet_interventions input, placebos left out).
-- Parameters: none. Output: i (study row number in nct_id byte order), value (lower(name)), label (name).
WITH r AS MATERIALIZED (
    SELECT nct_id, (row_number() OVER (ORDER BY nct_id COLLATE "C") - 1)::int AS i FROM app.study_facets
)
SELECT r.i, lower(x.name) AS value, x.name AS label
FROM ctgov.interventions x JOIN r ON r.nct_id = x.nct_id
WHERE x.name IS NOT NULL AND lower(x.name) NOT IN ('placebo', 'placebos')
