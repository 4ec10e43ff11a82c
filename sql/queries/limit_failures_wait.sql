-- Seconds until the next password try is accepted for any of the keys (0 when none must wait). Params: kind, keys text[]. Output: wait_s, failures.
SELECT coalesce(max(greatest(0, extract(epoch FROM next_try_at - clock_timestamp()))), 0) AS wait_s,
       coalesce(max(failures), 0) AS failures
FROM app.limit_failures
WHERE kind = :kind AND key = ANY(CAST(:keys AS text[]))
