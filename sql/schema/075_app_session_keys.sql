-- Assistant sessions are stored under the SHA-256 of their token (64 hex digits, services/assistant/store.py),
-- never the token itself. Rows stored before under a raw token (43 URL-safe characters) are deleted, with their
-- health records (ON DELETE CASCADE): their links open a new session saying no saved session was found. Idempotent.
DELETE FROM app.sessions WHERE token !~ '^[0-9a-f]{64}$';
