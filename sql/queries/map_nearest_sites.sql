-- The located sites nearest to the filter's place, nearest first. Needs CTE area (with near_lat set).
-- Params: limit. Output: miles, site_id, nct_id, facility, city, state, country, lat, lon, site_status,
-- trial_status, title.
SELECT miles, site_id, nct_id, facility, city, state, country, lat, lon, site_status, trial_status, title
FROM area
WHERE miles IS NOT NULL
ORDER BY miles, site_id
LIMIT :limit
