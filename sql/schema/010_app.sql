-- Application state (schema `app`): assistant sessions, saved views and load metadata. Idempotent.
CREATE SCHEMA IF NOT EXISTS app;

CREATE TABLE IF NOT EXISTS app.meta (
    key text PRIMARY KEY,
    value text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS app.imports (
    id bigserial PRIMARY KEY,
    source_kind text NOT NULL,
    source_path text NOT NULL,
    studies integer NOT NULL,
    row_counts jsonb NOT NULL,
    seconds double precision NOT NULL,
    imported_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS app.sessions (
    token text PRIMARY KEY CHECK (length(token) >= 22),
    data jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_sessions_expires ON app.sessions (expires_at);

CREATE TABLE IF NOT EXISTS app.saved_views (
    id bigserial PRIMARY KEY,
    name text NOT NULL,
    query text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
