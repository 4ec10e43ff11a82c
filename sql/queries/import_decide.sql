-- Per study staged for import (_s_studies, with provenance rows in _s_sources): whether its rows replace ours
-- (take) or ours is kept (then only tables ours has no rows in are added), and why. The incoming record is
-- taken when the study is new, when $1 (--replace) is set, when ours is partial and it is not, or when it is
-- not older than ours (last_update_posted_date) and not a partial record over a full one. Parameters: $1
-- replace (boolean). Fills _decide (nct_id, take, action, reason).
INSERT INTO _decide (nct_id, take, action, reason)
SELECT s.nct_id, x.take,
       CASE WHEN NOT x.existed THEN 'new' WHEN x.take THEN 'replaced' ELSE 'kept' END,
       CASE
           WHEN NOT x.existed THEN 'not in the database'
           WHEN $1 THEN 'replaced as asked (--replace)'
           WHEN x.ours_partial AND NOT x.theirs_partial
               THEN 'our copy was a partial record (' || coalesce(p.source_kind, 'partial') || ')'
           WHEN x.theirs_partial AND NOT x.ours_partial
               THEN 'our copy is a full record; this source is partial ('
                    || coalesce(ts.source_kind, 'partial') || ')'
           WHEN s.last_update_posted_date > o.last_update_posted_date
               THEN 'newer: last update ' || s.last_update_posted_date
                    || ', ours ' || o.last_update_posted_date
           WHEN s.last_update_posted_date = o.last_update_posted_date
               THEN 'same last update ' || s.last_update_posted_date
           WHEN s.last_update_posted_date IS NOT NULL AND o.last_update_posted_date IS NULL
               THEN 'last update ' || s.last_update_posted_date || '; ours gives none'
           WHEN s.last_update_posted_date IS NULL AND o.last_update_posted_date IS NULL
               THEN 'neither gives a last update date'
           WHEN s.last_update_posted_date IS NULL
               THEN 'ours is dated (last update ' || o.last_update_posted_date
                    || '); this record gives no date'
           ELSE 'ours is newer: last update ' || o.last_update_posted_date || ', this record '
                || s.last_update_posted_date
       END
FROM _s_studies s
LEFT JOIN ctgov.studies o ON o.nct_id = s.nct_id
LEFT JOIN app.study_sources p ON p.nct_id = s.nct_id
LEFT JOIN _s_sources ts ON ts.nct_id = s.nct_id
CROSS JOIN LATERAL (
    SELECT o.nct_id IS NOT NULL AS existed,
           coalesce(cardinality(p.lacks) > 0, false) AS ours_partial,
           coalesce(cardinality(ts.lacks) > 0, false) AS theirs_partial
) f
CROSS JOIN LATERAL (
    SELECT f.existed, f.ours_partial, f.theirs_partial,
           NOT f.existed OR $1 OR (f.ours_partial AND NOT f.theirs_partial)
           OR (NOT (f.theirs_partial AND NOT f.ours_partial)
               AND (coalesce(s.last_update_posted_date >= o.last_update_posted_date, false)
                    OR o.last_update_posted_date IS NULL)) AS take
) x
