-- Derived tables for registry-scale dashboards (schema `app`): one row per study with canonical facet values,
-- and a dictionary of condition terms. Rebuilt after every import by sql/queries/refresh_study_facets.sql.
-- Everything here is derived from `ctgov`; on a read-only AACT the app queries `ctgov` directly instead.
CREATE SCHEMA IF NOT EXISTS app;

CREATE TABLE IF NOT EXISTS app.study_facets (
    nct_id varchar PRIMARY KEY,
    status text,
    phases text[],
    phase_raw text,
    study_type text,
    funder_class text,
    lead_sponsor text,
    enrollment integer,
    enrollment_type text,
    start_date date,
    start_year integer,
    duration_bucket smallint,
    min_age_years numeric,
    max_age_years numeric,
    max_age_in_years boolean,
    gender text,
    healthy boolean,
    has_results boolean,
    finish_year integer,
    n_sites integer,
    n_collaborators integer,
    country_names text[],
    us_states text[],
    intervention_types text[],
    why_stopped text
);
CREATE INDEX IF NOT EXISTS ix_study_facets_status ON app.study_facets (status);

CREATE TABLE IF NOT EXISTS app.terms (
    term_id serial PRIMARY KEY,
    term text NOT NULL UNIQUE
);
CREATE INDEX IF NOT EXISTS ix_terms_trgm ON app.terms USING gin (term gin_trgm_ops);
-- A term's words (services.dashboard.condition.words_sql's split), so a condition resolves in the dictionary by index.
ALTER TABLE app.terms ADD COLUMN IF NOT EXISTS words text[];
UPDATE app.terms SET words = regexp_split_to_array(term, '[^[:alnum:]_]+') WHERE words IS NULL;
CREATE INDEX IF NOT EXISTS ix_terms_words ON app.terms USING gin (words);

CREATE TABLE IF NOT EXISTS app.term_studies (
    term_id integer NOT NULL,
    nct_id varchar NOT NULL,
    PRIMARY KEY (term_id, nct_id)
);
