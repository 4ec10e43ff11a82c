-- Insert or replace one assistant session. Parameters: :token, :data (JSON text), :days (lifetime from now).
INSERT INTO app.sessions (token, data, created_at, updated_at, expires_at)
VALUES (:token, CAST(:data AS jsonb), now(), now(), now() + make_interval(days => CAST(:days AS int)))
ON CONFLICT (token) DO UPDATE
   SET data = EXCLUDED.data, updated_at = now(), expires_at = EXCLUDED.expires_at
