-- One more wrong try for every key: failures + 1 and a delay of first_s·2^(failures−1), at most max_s. Params: kind, keys text[], first_s, max_s. Output: wait_s, failures (the largest over the keys).
WITH bumped AS (
    INSERT INTO app.limit_failures AS f (kind, key, failures, next_try_at)
    SELECT :kind, k, 1, clock_timestamp() + make_interval(secs => :first_s)
    FROM unnest(CAST(:keys AS text[])) AS k
    ON CONFLICT (kind, key) DO UPDATE
        SET failures = f.failures + 1,
            next_try_at = clock_timestamp() + make_interval(
                secs => least(CAST(:max_s AS float8), :first_s * power(2, least(f.failures, 16)))),
            updated_at = now()
    RETURNING failures, next_try_at
)
SELECT max(greatest(0, extract(epoch FROM next_try_at - clock_timestamp()))) AS wait_s, max(failures) AS failures
FROM bumped
