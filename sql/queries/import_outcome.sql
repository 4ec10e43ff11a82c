-- What an import did per study (after the merge): new / replaced / enriched / kept, the reason, and for an
-- enriched study the tables added. Studies other than new first, then by NCT id. Parameters: $1 the most rows
-- to return. Output: nct_id, action, reason, added (text[]).
SELECT d.nct_id,
       CASE WHEN NOT d.take AND e.added IS NOT NULL THEN 'enriched' ELSE d.action END AS action,
       d.reason, coalesce(e.added, '{}') AS added
FROM _decide d
LEFT JOIN (SELECT nct_id, array_agg(tbl ORDER BY tbl) AS added FROM _enriched GROUP BY nct_id) e
    ON e.nct_id = d.nct_id
ORDER BY d.action = 'new', d.nct_id
LIMIT $1
