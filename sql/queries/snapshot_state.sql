-- The latest snapshot generation and whether the data is still what it recorded. Parameters: none.
-- Output: generation, taken_at, facets_stamp, studies (of the latest generation; NULLs when there is none),
-- current_stamp (app.meta facets_refreshed_at now), current_studies (ctgov.studies now).
SELECT g.generation, g.taken_at, g.facets_stamp, g.studies,
       (SELECT value FROM app.meta WHERE key = 'facets_refreshed_at') AS current_stamp,
       (SELECT count(*) FROM ctgov.studies) AS current_studies
FROM (SELECT 1) one
LEFT JOIN app.snapshot_generations g ON g.generation = (SELECT max(generation) FROM app.snapshot_generations)
