-- One snapshot generation, if it is still kept. Parameters: generation. Output: generation, taken_at, studies.
SELECT generation, taken_at, studies FROM app.snapshot_generations WHERE generation = :generation
