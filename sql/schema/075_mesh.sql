-- MeSH 2024 in the database (services/data/studymesh.py fills these at start, once per MeSH data version).
-- ctgov.mesh_terms and ctgov.mesh_headings have AACT's columns (db/ctgov_v2.sql; app/models/mesh_term.rb,
-- mesh_heading.rb): one mesh_terms row per tree number (qualifier = its top-level category, e.g. 'C04'), and one
-- mesh_headings row per category and descriptor under it. They hold no study rows, so imports leave them alone.
-- app.study_mesh maps each study to its MeSH descriptors: browse_conditions rows (mesh-list, mesh-ancestor, by
-- name) and its condition names resolved by services/vocab/mesh.py (source 'name'); rebuilt after every import.
-- Idempotent.
CREATE TABLE IF NOT EXISTS ctgov.mesh_terms (
    id serial PRIMARY KEY,
    qualifier varchar,
    tree_number varchar,
    description varchar,
    mesh_term varchar,
    downcase_mesh_term varchar
);
CREATE INDEX IF NOT EXISTS ix_mesh_terms_downcase ON ctgov.mesh_terms (downcase_mesh_term);
CREATE INDEX IF NOT EXISTS ix_mesh_terms_tree ON ctgov.mesh_terms (tree_number);

CREATE TABLE IF NOT EXISTS ctgov.mesh_headings (
    id serial PRIMARY KEY,
    qualifier varchar,
    heading varchar,
    subcategory varchar
);
CREATE INDEX IF NOT EXISTS ix_mesh_headings_qualifier ON ctgov.mesh_headings (qualifier);

CREATE SCHEMA IF NOT EXISTS app;
CREATE TABLE IF NOT EXISTS app.study_mesh (
    nct_id varchar NOT NULL,
    descriptor_ui varchar NOT NULL,
    source varchar NOT NULL CHECK (source IN ('mesh-list', 'mesh-ancestor', 'name')),
    PRIMARY KEY (descriptor_ui, nct_id, source)
);
CREATE INDEX IF NOT EXISTS ix_study_mesh_nct ON app.study_mesh (nct_id);
