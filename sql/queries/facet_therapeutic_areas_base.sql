-- Facet: studies per therapeutic area on AACT's base tables (a database without app.study_mesh): a study is in an
-- area when one of its browse_conditions headings is a descriptor of the area. Needs CTE m(nct_id). Parameters:
-- :area_heads, :area_names (text[] of equal length: each heading of each area in lower case, and the area's name).
-- Output: value (area name), n (distinct studies).
SELECT a.area AS value, count(DISTINCT b.nct_id) AS n
FROM m JOIN ctgov.browse_conditions b ON b.nct_id = m.nct_id
JOIN unnest(CAST(:area_heads AS text[]), CAST(:area_names AS text[])) AS a(head, area) ON a.head = b.downcase_mesh_term
GROUP BY a.area
