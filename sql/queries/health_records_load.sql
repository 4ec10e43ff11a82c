-- One session's uploaded health records, newest first. Parameters: :token. Output: kind, key, name, value, unit,
-- std_value, std_unit, observed_on, source.
SELECT kind, key, name, value, unit, std_value, std_unit, observed_on, source
FROM app.health_records
WHERE token = :token
ORDER BY observed_on DESC, kind, key, id
