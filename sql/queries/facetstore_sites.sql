-- One slice of the sites of every study for the in-process map engine, in site-id order.
-- Params: lo, hi (site ids, lo included, hi not). Output: nct_id, site_id, lat, lon (float8, as map_area.sql),
-- country, state, city, shown_status (the site's status, else the trial's: what map_site_grid.sql takes the mode of).
SELECT f.nct_id, f.id AS site_id, f.latitude::float8 AS lat, f.longitude::float8 AS lon, f.country, f.state, f.city,
       COALESCE(NULLIF(btrim(f.status), ''), s.overall_status) AS shown_status
FROM ctgov.facilities f
JOIN ctgov.studies s ON s.nct_id = f.nct_id
WHERE f.id >= CAST(:lo AS bigint) AND f.id < CAST(:hi AS bigint)
ORDER BY f.id
