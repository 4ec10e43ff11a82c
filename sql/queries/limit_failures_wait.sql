-- Seconds until the next password try is accepted for any of the keys (0 when none must wait), and the first key's (the browser's) wrong tries in a row. Params: kind, keys text[]. Output: wait_s, browser_failures.
SELECT coalesce(max(greatest(0, extract(epoch FROM next_try_at - clock_timestamp()))), 0) AS wait_s,
       coalesce(max(failures) FILTER (WHERE key = (CAST(:keys AS text[]))[1]), 0) AS browser_failures
FROM app.limit_failures
WHERE kind = :kind AND key = ANY(CAST(:keys AS text[]))
