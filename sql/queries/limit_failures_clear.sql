-- Forget the wrong tries of the keys (after a right password), and rows idle for a day. Params: kind, keys text[]. Output: key (the rows removed).
DELETE FROM app.limit_failures
WHERE kind = :kind AND (key = ANY(CAST(:keys AS text[])) OR updated_at < now() - interval '1 day')
RETURNING key
