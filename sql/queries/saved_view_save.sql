-- Save a view under a name (a view of the same name, in any letter case, is replaced and watched afresh).
-- Parameters: name, query (filters), page, view_query, watch_country (or NULL). Output: id.
INSERT INTO app.saved_views (name, query, page, view_query, watch_country, baseline, baseline_ids, opened_at)
VALUES (:name, :query, :page, :view_query, CAST(:watch_country AS text), NULL, NULL, NULL)
ON CONFLICT (lower(name)) DO UPDATE SET name = EXCLUDED.name, query = EXCLUDED.query, page = EXCLUDED.page,
    view_query = EXCLUDED.view_query, watch_country = EXCLUDED.watch_country, baseline = NULL, baseline_ids = NULL,
    opened_at = NULL, created_at = now()
RETURNING id
