-- Whether the database holds a published start-cache copy under a key (its manifest is written with it).
-- Params: key. Output: one boolean.
SELECT EXISTS (SELECT 1 FROM app.facet_copy WHERE key = CAST(:key AS text) AND name = 'manifest.json')
