-- Rebuild app.site_group_keys and app.site_groups from the temporary table site_keys (facility_id, nct_id,
-- group_key: sql/queries/site_keys.sql over every facility; services/data/sitename.refresh_sql makes it first).
-- Run after every import, in its transaction. Parameters: none. Output: none.
TRUNCATE app.site_groups, app.site_group_keys;
INSERT INTO app.site_group_keys (group_id, group_key)
SELECT (row_number() OVER (ORDER BY group_key COLLATE "C"))::int, group_key
FROM (SELECT DISTINCT group_key FROM site_keys WHERE group_key IS NOT NULL) d;
INSERT INTO app.site_groups (facility_id, group_id)
SELECT k.facility_id, g.group_id FROM site_keys k JOIN app.site_group_keys g ON g.group_key = k.group_key;
DROP TABLE site_keys;
ANALYZE app.site_group_keys;
ANALYZE app.site_groups;
INSERT INTO app.meta (key, value) VALUES ('facets_refreshed_at', now()::text)
ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now();
