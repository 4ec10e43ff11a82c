-- Facet: studies per therapeutic area (data/mesh/therapeutic_areas.csv, issue 38): a study is in an area
-- when one of its MeSH descriptors (ctgov.study_mesh_terms, every source) is one of the area's
-- (ctgov.therapeutic_area_terms: the area's tree number and everything under it); views the SQL console
-- reads too. Needs CTE m(nct_id). Parameters: none. Output: value (area name), n (distinct studies), most
-- studies first.
SELECT a.area AS value, count(DISTINCT t.nct_id) AS n
FROM m JOIN ctgov.study_mesh_terms t ON t.nct_id = m.nct_id
JOIN ctgov.therapeutic_area_terms a ON a.descriptor_ui = t.descriptor_ui
GROUP BY a.area
ORDER BY n DESC, a.area
