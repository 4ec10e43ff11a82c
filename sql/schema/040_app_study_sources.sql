-- Where each study's record came from and which fields that source did not carry (schema `app`, beside AACT's
-- tables, never inside ctgov). Written by the importers; a database without it (read-only AACT) counts every
-- record as full. Idempotent.
CREATE SCHEMA IF NOT EXISTS app;

CREATE TABLE IF NOT EXISTS app.study_sources (
    nct_id varchar PRIMARY KEY,
    source_kind text NOT NULL,                -- ctgov-json | ctgov-csv
    source_name text,                         -- the file, or a CSV row's own `_source`
    lacks text[] NOT NULL DEFAULT '{}',       -- fields our copy lacks because its source did not carry them
    criteria_source text,                     -- where criteria text added later came from (owner/repo:path@commit)
    criteria_format text,                     -- v2 | legacy_xml_textblock | … (the fill's own label)
    criteria_as_of date                       -- how old that text is
);
