-- What a first visitor's pages show before any filter is chosen — the dashboard of the default filters (Home and
-- Explore) and the sidebar's list of countries — kept with the generation of the derived tables it was computed
-- from. A server that has not yet got its in-process engine ready (a start whose cache folder and database copy are
-- missing or stale: ~20 s of loading at 575,000 studies) shows these from here at once instead of computing them by
-- SQL meanwhile (~25 s for the dashboard). `stamp` is the generation (app.meta facets_refreshed_at), `name` what the
-- value is (services/dashboard/landing.py); only the latest generation is kept.
CREATE TABLE IF NOT EXISTS app.landing (
    stamp text NOT NULL,
    name text NOT NULL,
    value jsonb NOT NULL,
    saved_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stamp, name)
);
