-- Every saved view, by name. Parameters: none.
-- Output: id, name, query, page, view_query, watch_country, baseline, opened_at, created_at.
SELECT id, name, query, page, view_query, watch_country, baseline, opened_at, created_at
FROM app.saved_views ORDER BY lower(name), id
