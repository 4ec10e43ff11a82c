-- The landing view's numbers (the dashboard of the default filters: what Home and Explore show a first visitor),
-- kept with the generation of the derived tables they were computed from. A server that has not yet got its
-- in-process engine ready — a start whose cache folder and database copy are missing or stale, ~20 s of loading
-- at 575,000 studies — shows the landing view from here at once instead of computing it by SQL meanwhile (~25 s).
-- `stamp` is the generation (app.meta facets_refreshed_at), `specs` a hash of the facet definitions the numbers
-- answer; only the latest generation is kept.
CREATE TABLE IF NOT EXISTS app.landing_dashboard (
    stamp text NOT NULL,
    specs text NOT NULL,
    frames jsonb NOT NULL,
    saved_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stamp, specs)
);
