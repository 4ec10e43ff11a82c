-- Facility groups for the Sites page (schema `app`): which facility rows are the same site (services/data/sitename.py:
-- name, city, US state and country folded). Derived from ctgov.facilities; rebuilt after every import by
-- sql/queries/refresh_site_groups.sql, and at start when built by another version of the rule (app.meta
-- 'site_groups_rule'). group_id follows the key's byte order, so ordering by it orders by key.
CREATE SCHEMA IF NOT EXISTS app;

CREATE TABLE IF NOT EXISTS app.site_group_keys (
    group_id integer PRIMARY KEY,
    group_key text NOT NULL UNIQUE
);

CREATE TABLE IF NOT EXISTS app.site_groups (
    facility_id integer PRIMARY KEY,  -- ctgov.facilities.id; a facility without a name has no row
    group_id integer NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_site_groups_group ON app.site_groups (group_id);
