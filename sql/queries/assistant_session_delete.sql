-- Delete one assistant session ("forget this session"). Parameters: :token.
DELETE FROM app.sessions WHERE token = :token
