-- Every site of every study for the in-process map engine. Parameters: none.
-- Output: i (study row number in nct_id byte order), site_id, lat, lon (float8, as map_area.sql), country, state,
-- city, shown_status (the site's status, else the trial's: what map_site_grid.sql takes the mode of).
WITH r AS MATERIALIZED (
    SELECT nct_id, (row_number() OVER (ORDER BY nct_id COLLATE "C") - 1)::int AS i FROM app.study_facets
)
SELECT r.i, f.id AS site_id, f.latitude::float8 AS lat, f.longitude::float8 AS lon, f.country, f.state, f.city,
       COALESCE(NULLIF(btrim(f.status), ''), s.overall_status) AS shown_status
FROM ctgov.facilities f
JOIN r ON r.nct_id = f.nct_id
JOIN ctgov.studies s ON s.nct_id = f.nct_id
