-- Make a copy written under a private key the only one, in one statement: every other copy (an older generation,
-- another writer's half-written one) is deleted and the private key becomes the public one. Params: private, key.
-- Output: files (how many files the published copy has; 0 when another writer's publish removed this one).
WITH gone AS (
    DELETE FROM app.facet_copy WHERE key <> CAST(:private AS text)
), published AS (
    UPDATE app.facet_copy SET key = CAST(:key AS text) WHERE key = CAST(:private AS text) RETURNING name
)
SELECT count(DISTINCT name) AS files FROM published
