-- Which of some NCT ids matched a saved view at its baseline. Parameters: id, ids (text[]). Output: nct_id.
SELECT x AS nct_id FROM unnest(CAST(:ids AS text[])) x
INTERSECT
SELECT unnest(baseline_ids) FROM app.saved_views WHERE id = :id
