-- Keep the landing values of the current generation only: older generations go, a second writer of the same value
-- changes nothing.
WITH older AS (DELETE FROM app.landing WHERE stamp <> :stamp)
INSERT INTO app.landing (stamp, name, value) VALUES (:stamp, :name, CAST(:value AS jsonb))
ON CONFLICT (stamp, name) DO NOTHING
