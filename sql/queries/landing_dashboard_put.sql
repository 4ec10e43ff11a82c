-- Keep the landing dashboard of the current generation only: older generations go, a second writer of the same
-- one changes nothing.
WITH older AS (DELETE FROM app.landing_dashboard WHERE stamp <> :stamp)
INSERT INTO app.landing_dashboard (stamp, specs, frames) VALUES (:stamp, :specs, CAST(:frames AS jsonb))
ON CONFLICT (stamp, specs) DO NOTHING
