-- Condition rows for the in-process facet engine (the facet_conditions input). Parameters: none.
-- Output: i (study row number in nct_id byte order), value (downcase_name), label (name).
WITH r AS MATERIALIZED (
    SELECT nct_id, (row_number() OVER (ORDER BY nct_id COLLATE "C") - 1)::int AS i FROM app.study_facets
)
SELECT r.i, c.downcase_name AS value, c.name AS label
FROM ctgov.conditions c JOIN r ON r.nct_id = c.nct_id
