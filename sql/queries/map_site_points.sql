-- Every located site of the map, one row each (the caller has checked the count first). Needs CTE area.
-- Params: limit. Output: site_id, nct_id, facility, city, state, country, lat, lon, site_status, trial_status,
-- title, miles.
SELECT site_id, nct_id, facility, city, state, country, lat, lon, site_status, trial_status, title, miles
FROM area
WHERE lat IS NOT NULL
ORDER BY site_id
LIMIT :limit
