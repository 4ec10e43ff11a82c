-- Mark a view opened: its baseline becomes the latest snapshot generation and the trials matching it now, read in
-- one statement so both describe the same data. The caller prepends `WITH m AS (…)` (the matching NCT ids).
-- Nothing changes when the data is not the latest snapshot's (changed by a route that keeps none): the view keeps
-- its baseline, and the next import's snapshot is compared with it.
-- Parameters: id, stamp (the derived tables' refresh stamp the ids in m were computed from, or NULL when m reads
-- the base tables in this statement). Output: baseline, opened_at.
, latest AS (
    SELECT g.generation FROM app.snapshot_generations g
    WHERE g.generation = (SELECT max(generation) FROM app.snapshot_generations)
      AND g.facets_stamp IS NOT DISTINCT FROM (SELECT value FROM app.meta WHERE key = 'facets_refreshed_at')
      AND (CAST(:stamp AS text) IS NULL OR g.facets_stamp = CAST(:stamp AS text))
      AND g.studies = (SELECT count(*) FROM ctgov.studies)
)
UPDATE app.saved_views v
SET baseline = (SELECT generation FROM latest), baseline_ids = ARRAY(SELECT nct_id FROM m ORDER BY nct_id),
    opened_at = now()
WHERE v.id = :id AND EXISTS (SELECT 1 FROM latest)
RETURNING v.baseline, v.opened_at
