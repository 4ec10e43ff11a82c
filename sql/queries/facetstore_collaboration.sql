-- Lead sponsor → collaborator pairs per study for the in-process facet engine (the facet_collaboration input).
-- Parameters: none. Output: i (study row number in nct_id byte order), value (lead name), collaborator.
WITH r AS MATERIALIZED (
    SELECT nct_id, (row_number() OVER (ORDER BY nct_id COLLATE "C") - 1)::int AS i FROM app.study_facets
)
SELECT DISTINCT r.i, l.name AS value, c.name AS collaborator
FROM r
JOIN ctgov.sponsors l ON l.nct_id = r.nct_id AND l.lead_or_collaborator = 'lead'
JOIN ctgov.sponsors c ON c.nct_id = r.nct_id AND c.lead_or_collaborator = 'collaborator'
