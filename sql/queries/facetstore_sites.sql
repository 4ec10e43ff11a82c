-- One slice of the sites of every study for the in-process map engine, in site-id order.
-- Params: lo, hi (site ids, lo included, hi not). Output: nct_id, site_id, lat, lon (float8, as map_area.sql),
-- country, state, city, shown_status (the site's status, else the trial's: what map_site_grid.sql takes the mode of),
-- site_group (app.site_groups' group of the facility: the Sites page; NULL for a facility without a name).
SELECT f.nct_id, f.id AS site_id, f.latitude::float8 AS lat, f.longitude::float8 AS lon, f.country, f.state, f.city,
       COALESCE(NULLIF(btrim(f.status), ''), s.overall_status) AS shown_status, g.group_id AS site_group
FROM ctgov.facilities f
JOIN ctgov.studies s ON s.nct_id = f.nct_id
LEFT JOIN app.site_groups g ON g.facility_id = f.id
WHERE f.id >= CAST(:lo AS bigint) AND f.id < CAST(:hi AS bigint)
ORDER BY f.id
