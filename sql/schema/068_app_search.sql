-- The text-search document of each study (schema `app`, derived from `ctgov`) for the relevance order
-- (services/dashboard/relevance.py): a weighted tsvector of title and conditions (A), keywords and MeSH terms (B)
-- and the brief summary (C), and the term ids (app.terms) of its condition names, own MeSH terms, MeSH ancestors
-- and keywords, so a condition's concept match is array tests instead of splitting every term again.
-- Filled after every import by services.data.loaders.REFRESH_SEARCH (sql/queries/search_documents.sql and
-- search_terms.sql over every study); a database without it ranks from ctgov on the fly. Idempotent.
CREATE SCHEMA IF NOT EXISTS app;

CREATE TABLE IF NOT EXISTS app.study_search (
    nct_id varchar PRIMARY KEY,
    doc tsvector NOT NULL,
    condition_terms integer[] NOT NULL DEFAULT '{}',  -- one entry per condition row (repeats kept)
    mesh_terms integer[] NOT NULL DEFAULT '{}',       -- its own MeSH terms (mesh-list)
    ancestor_terms integer[] NOT NULL DEFAULT '{}',   -- MeSH ancestors AACT added (mesh-ancestor)
    keyword_terms integer[] NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS ix_study_search_doc ON app.study_search USING gin (doc);
