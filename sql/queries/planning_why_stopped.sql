-- Planning benchmarks: why the matching terminated trials stopped, reasons grouped as Explore's chart groups them
-- (lower-cased, trimmed text). Needs CTE m(nct_id). Parameters: none. Output: value (NULL: no reason given), n;
-- every reason, most frequent first, then by text (byte order).
SELECT NULLIF(lower(btrim(s.why_stopped)), '') AS value, count(*) AS n
FROM m JOIN ctgov.studies s ON s.nct_id = m.nct_id
WHERE (CASE WHEN upper(s.overall_status) = 'UNKNOWN STATUS' THEN 'UNKNOWN'
            ELSE upper(regexp_replace(btrim(s.overall_status), '[^A-Za-z0-9]+', '_', 'g')) END) = 'TERMINATED'
GROUP BY 1
ORDER BY n DESC, NULLIF(lower(btrim(s.why_stopped)), '') COLLATE "C" NULLS LAST
