-- Saved views that report what changed (schema `app`). Idempotent.
-- A saved view is a name, the filters (a share-link query string with the patient's answers always removed), the
-- page it was saved on, an optional country to watch for new sites, and its baseline: the snapshot generation it
-- was last opened at and the NCT ids that matched it then. Saved views are shared by everyone using this database.
CREATE SCHEMA IF NOT EXISTS app;

-- app.saved_views came unused from 010_app.sql (id, name, query, created_at); these columns make it a watched view.
ALTER TABLE app.saved_views ADD COLUMN IF NOT EXISTS page text NOT NULL DEFAULT 'Explore';
ALTER TABLE app.saved_views ADD COLUMN IF NOT EXISTS view_query text NOT NULL DEFAULT '';
ALTER TABLE app.saved_views ADD COLUMN IF NOT EXISTS watch_country text;
ALTER TABLE app.saved_views ADD COLUMN IF NOT EXISTS baseline integer;
ALTER TABLE app.saved_views ADD COLUMN IF NOT EXISTS baseline_ids text[];
ALTER TABLE app.saved_views ADD COLUMN IF NOT EXISTS opened_at timestamptz;
CREATE UNIQUE INDEX IF NOT EXISTS ux_saved_views_name ON app.saved_views (lower(name));

-- One row per import that recorded a snapshot (sql/queries/snapshot_studies.sql, in the import's transaction).
-- facets_stamp is app.meta 'facets_refreshed_at' of that import's refresh and studies its study count: when the
-- database no longer shows both, the data was changed by a route that keeps no snapshot.
CREATE TABLE IF NOT EXISTS app.snapshot_generations (
    generation serial PRIMARY KEY,
    taken_at timestamptz NOT NULL DEFAULT now(),
    facets_stamp text,
    studies integer NOT NULL
);

-- The watched fields of every study as versions: a row holds from generation valid_from up to (not including)
-- valid_to (NULL: still current). An import adds a row only for a study whose fields changed, so the table grows with
-- the changes, and versions no kept generation falls in are deleted (sql/queries/prune_snapshots.sql).
CREATE TABLE IF NOT EXISTS app.study_versions (
    nct_id varchar NOT NULL,
    valid_from integer NOT NULL,
    valid_to integer,
    status text,
    has_results boolean,
    results_posted date,
    countries text[],
    country_sites integer[],
    PRIMARY KEY (nct_id, valid_from)
);
CREATE INDEX IF NOT EXISTS ix_study_versions_from ON app.study_versions (valid_from);
CREATE INDEX IF NOT EXISTS ix_study_versions_to ON app.study_versions (valid_to) WHERE valid_to IS NOT NULL;
