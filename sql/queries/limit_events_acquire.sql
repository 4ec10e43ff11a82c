-- Count one event for every key when each key is under its limit in the window (run after an advisory lock). Params: kind, keys text[], limits int[], window_s. Output: key, cap, counted (before), allowed, retry_s.
WITH pruned AS (
    DELETE FROM app.limit_events WHERE kind = :kind AND at <= clock_timestamp() - make_interval(secs => :window_s)
),
counts AS (
    SELECT k.key, k.cap,
           (SELECT count(*) FROM app.limit_events e
             WHERE e.kind = :kind AND e.key = k.key
               AND e.at > clock_timestamp() - make_interval(secs => :window_s)) AS counted,
           (SELECT min(e.at) FROM app.limit_events e
             WHERE e.kind = :kind AND e.key = k.key
               AND e.at > clock_timestamp() - make_interval(secs => :window_s)) AS oldest
    FROM unnest(CAST(:keys AS text[]), CAST(:limits AS int[])) AS k(key, cap)
),
verdict AS (
    SELECT bool_and(counted < cap) AS allowed FROM counts
),
added AS (
    INSERT INTO app.limit_events (kind, key)
    SELECT :kind, c.key FROM counts c, verdict v WHERE v.allowed
    RETURNING 1
)
SELECT c.key, c.cap, c.counted, v.allowed,
       CASE WHEN c.counted >= c.cap
            THEN greatest(0, extract(epoch FROM c.oldest + make_interval(secs => :window_s) - clock_timestamp()))
            ELSE 0 END AS retry_s
FROM counts c, verdict v
