-- Health records a patient uploaded into an assistant session (Apple Health export or a CSV), one row per recognised
-- value. They belong to the session: deleting or expiring the session deletes them (ON DELETE CASCADE). Idempotent.
CREATE TABLE IF NOT EXISTS app.health_records (
    id bigserial PRIMARY KEY,
    token text NOT NULL REFERENCES app.sessions (token) ON DELETE CASCADE,
    source text NOT NULL CHECK (source IN ('apple-health', 'csv')),
    kind text NOT NULL CHECK (kind IN ('lab', 'vital', 'steps')),
    key text NOT NULL CHECK (key ~ '^[a-z0-9_]{1,40}$'),
    name text NOT NULL CHECK (length(name) <= 200),
    value double precision NOT NULL,
    unit text NOT NULL CHECK (length(unit) <= 60),
    std_value double precision NOT NULL,
    std_unit text NOT NULL CHECK (length(std_unit) <= 40),
    observed_on date NOT NULL,
    stored_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS ix_health_records_token ON app.health_records (token, kind, key, observed_on);
