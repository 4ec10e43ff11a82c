-- The in-process engine's start cache, kept in the database as well as in the cache folder beside it (one copy, of
-- the latest generation of the derived tables): a server whose own cache folder is missing or stale — another host
-- of the same database, a fresh container, a deleted folder — fetches these files (a second or two at 575,000
-- studies) instead of loading the arrays by COPY (~20 s). `key` is the cache folder's name (format + generation);
-- a copy is written under a private key and renamed in one statement, so a reader never sees half of one.
CREATE TABLE IF NOT EXISTS app.facet_copy (
    key text NOT NULL,
    name text NOT NULL,
    part integer NOT NULL,
    data bytea NOT NULL,
    -- checked at commit: publishing deletes the old copy and renames the new one in the same statement
    PRIMARY KEY (key, name, part) DEFERRABLE INITIALLY DEFERRED
);
ALTER TABLE app.facet_copy ALTER COLUMN data SET STORAGE EXTERNAL;  -- numpy arrays barely compress: skip trying
