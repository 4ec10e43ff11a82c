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

-- Each MeSH descriptor's preferred heading (services/data/studymesh.py loads it with the MeSH tables): the conditions
-- chart names app.study_mesh's descriptors by it (issue 38). Idempotent.
CREATE TABLE IF NOT EXISTS app.mesh_descriptors (
    descriptor_ui varchar PRIMARY KEY,
    name varchar NOT NULL
);

-- Each therapeutic area's MeSH descriptors (data/mesh/therapeutic_areas.csv: the area's tree number and
-- everything under it, services/vocab/areas.py; loaded with the MeSH tables): the therapeutic-areas chart.
-- Idempotent.
CREATE TABLE IF NOT EXISTS app.area_descriptors (
    area varchar NOT NULL,
    tree_number varchar NOT NULL,
    descriptor_ui varchar NOT NULL,
    PRIMARY KEY (area, descriptor_ui)
);
CREATE INDEX IF NOT EXISTS ix_area_descriptors_ui ON app.area_descriptors (descriptor_ui);

-- The same MeSH mapping as views in schema ctgov, the one the SQL console reads (its role `trial_reader`
-- has no access to schema app, and gets none: a view reads the app tables with its owner's rights), so the
-- conditions and therapeutic-areas charts' "Show the SQL" runs in the SQL page and gives the chart's numbers
-- (issue 38). study_mesh_terms: each study's MeSH descriptors by heading (source mesh-list, mesh-ancestor or
-- name); therapeutic_area_terms: each area's descriptors. Idempotent.
CREATE OR REPLACE VIEW ctgov.study_mesh_terms AS
    SELECT sm.nct_id, sm.descriptor_ui, d.name AS mesh_term, sm.source
    FROM app.study_mesh sm JOIN app.mesh_descriptors d ON d.descriptor_ui = sm.descriptor_ui;
CREATE OR REPLACE VIEW ctgov.therapeutic_area_terms AS
    SELECT a.area, a.tree_number, a.descriptor_ui, d.name AS mesh_term
    FROM app.area_descriptors a JOIN app.mesh_descriptors d ON d.descriptor_ui = a.descriptor_ui;
DO $$
BEGIN
    GRANT SELECT ON ctgov.study_mesh_terms, ctgov.therapeutic_area_terms TO trial_reader;
EXCEPTION
    WHEN undefined_object OR insufficient_privilege THEN
        RAISE NOTICE 'trial_reader not granted SELECT on the MeSH views (%)', SQLERRM;
END
$$;
