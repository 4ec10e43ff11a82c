-- The pieces of one file of the published start-cache copy, in order. Params: key, name. Output: data.
SELECT data FROM app.facet_copy WHERE key = CAST(:key AS text) AND name = CAST(:name AS text) ORDER BY part
