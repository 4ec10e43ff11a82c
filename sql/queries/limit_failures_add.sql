-- One more wrong try for every key: failures + 1 (from 1 again after idles[i] seconds without one), and once past frees[i] free tries a delay of first_s·2^(failures−free−1), at most max_s. Params: kind, keys text[], frees int[], idles float8[] (same order as keys), first_s, max_s. Output: wait_s (the largest over the keys), failures (the first key's).
WITH rules AS (
    SELECT k, free, idle_s, ord
    FROM unnest(CAST(:keys AS text[]), CAST(:frees AS int[]), CAST(:idles AS float8[])) WITH ORDINALITY
         AS r(k, free, idle_s, ord)
), bumped AS (
    INSERT INTO app.limit_failures AS f (kind, key, failures, next_try_at)
    SELECT :kind, k, 1,
           clock_timestamp() + make_interval(
               secs => CASE WHEN free < 1 THEN CAST(:first_s AS float8) ELSE 0 END)
    FROM rules
    ON CONFLICT (kind, key) DO UPDATE
        SET (failures, next_try_at, updated_at) = (
            SELECT n, clock_timestamp() + make_interval(secs => CASE WHEN n <= r.free THEN 0
                       ELSE least(CAST(:max_s AS float8),
                                  CAST(:first_s AS float8) * power(2, least(n - r.free - 1, 16))) END),
                   now()
            FROM rules AS r,
                 LATERAL (SELECT CASE WHEN f.updated_at < now() - make_interval(secs => r.idle_s) THEN 1
                                      ELSE f.failures + 1 END AS n) AS counted
            WHERE r.k = f.key)
    RETURNING key, failures, next_try_at
)
SELECT max(greatest(0, extract(epoch FROM b.next_try_at - clock_timestamp()))) AS wait_s,
       max(b.failures) FILTER (WHERE r.ord = 1) AS failures
FROM bumped AS b JOIN rules AS r ON r.k = b.key
