-- One assistant session that has not expired. Parameters: :token. Output: data (JSON text), expires_at.
SELECT data::text AS data, expires_at
FROM app.sessions
WHERE token = :token AND expires_at > now()
