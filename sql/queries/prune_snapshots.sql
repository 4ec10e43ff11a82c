-- Keep snapshot storage bounded: keep the latest generation and those a saved view's baseline names; delete every
-- version none of them falls in, then the other generations. Parameters: none. Output: none.
-- (Run in the import's transaction after snapshot_studies, and after a view is opened or deleted.)
CREATE TEMP TABLE snap_kept ON COMMIT DROP AS
SELECT generation FROM app.snapshot_generations
WHERE generation = (SELECT max(generation) FROM app.snapshot_generations)
   OR generation IN (SELECT baseline FROM app.saved_views WHERE baseline IS NOT NULL);
DELETE FROM app.study_versions v
WHERE v.valid_to IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM snap_kept k WHERE k.generation >= v.valid_from AND k.generation < v.valid_to);
DELETE FROM app.snapshot_generations g WHERE g.generation NOT IN (SELECT generation FROM snap_kept);
DROP TABLE snap_kept;
