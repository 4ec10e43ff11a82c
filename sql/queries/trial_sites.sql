-- Sites of one study. Params: nct_id. Output: site_id, facility, city, state, zip, country, status, lat, lon.
SELECT f.id AS site_id, f.name AS facility, f.city, f.state, f.zip, f.country, f.status,
       f.latitude::float8 AS lat, f.longitude::float8 AS lon
FROM ctgov.facilities f
WHERE f.nct_id = :nct_id
ORDER BY f.country, f.state, f.city, f.name, f.id
