-- Per-visitor limits shared by every app process (schema `app`): counted events and password failures. Idempotent.
CREATE SCHEMA IF NOT EXISTS app;

-- One row per counted event (an assistant message) per key: "b:<browser digest>", "n:<network digest>", "g:all".
CREATE TABLE IF NOT EXISTS app.limit_events (
    kind text NOT NULL,
    key text NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS ix_limit_events_key ON app.limit_events (kind, key, at);
CREATE INDEX IF NOT EXISTS ix_limit_events_at ON app.limit_events (kind, at);

-- Wrong passwords in a row per key and when that key may try again.
CREATE TABLE IF NOT EXISTS app.limit_failures (
    kind text NOT NULL,
    key text NOT NULL,
    failures integer NOT NULL,
    next_try_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, key)
);
