-- Replace one session's health records from one source with a new upload, in one statement (all or nothing).
-- Parameters: :token, :source ('apple-health' or 'csv'), :rows (JSON array of {kind, key, name, value, unit,
-- std_value, std_unit, observed_on}). Output: stored (rows inserted).
WITH gone AS (
    DELETE FROM app.health_records WHERE token = :token AND source = :source
), added AS (
    INSERT INTO app.health_records (token, source, kind, key, name, value, unit, std_value, std_unit, observed_on)
    SELECT :token, :source, r.kind, r.key, r.name, r.value, r.unit, r.std_value, r.std_unit, r.observed_on
    FROM jsonb_to_recordset(CAST(:rows AS jsonb)) AS r(kind text, key text, name text, value double precision,
                                                       unit text, std_value double precision, std_unit text,
                                                       observed_on date)
    RETURNING 1
)
SELECT count(*) AS stored FROM added
