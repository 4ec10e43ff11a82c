-- Delete every assistant session whose lifetime has ended. No parameters.
DELETE FROM app.sessions WHERE expires_at <= now()
