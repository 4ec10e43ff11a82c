-- Located sites aggregated into square grid cells of :cell degrees (for more sites than the browser draws well).
-- Needs CTE area. Params: cell (degrees). Output: lat, lon (mean position of the cell's sites), sites, trials,
-- status (most common site status, else trial status), city, country (most common), min_miles.
SELECT avg(lat) AS lat,
       avg(lon) AS lon,
       count(*) AS sites,
       count(DISTINCT nct_id) AS trials,
       mode() WITHIN GROUP (ORDER BY COALESCE(site_status, trial_status)) AS status,
       mode() WITHIN GROUP (ORDER BY city) AS city,
       mode() WITHIN GROUP (ORDER BY country) AS country,
       min(miles) AS min_miles
FROM area
WHERE lat IS NOT NULL
GROUP BY floor(lat / CAST(:cell AS float8)), floor(lon / CAST(:cell AS float8))
ORDER BY count(*) DESC
