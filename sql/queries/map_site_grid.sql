-- Located sites aggregated into square grid cells of :cell degrees (for more sites than the browser draws well).
-- Needs CTE area. Params: cell (degrees). Output: lat, lon (mean position of the cell's sites, rounded to 1e-5°),
-- sites, trials, status (most common site status, else trial status), city, country (most common; ties to the
-- first in byte order). Cells come largest first, ties by their lowest site id.
SELECT round(avg(lat::numeric), 5)::float8 AS lat,  -- exact mean of the stored micro-degrees (numeric),
       round(avg(lon::numeric), 5)::float8 AS lon,  -- so no summation order can move a half-way rounding
       count(*) AS sites,
       count(DISTINCT nct_id) AS trials,
       mode() WITHIN GROUP (ORDER BY COALESCE(site_status, trial_status) COLLATE "C") AS status,
       mode() WITHIN GROUP (ORDER BY city COLLATE "C") AS city,
       mode() WITHIN GROUP (ORDER BY country COLLATE "C") AS country
FROM area
WHERE lat IS NOT NULL
GROUP BY floor(lat / CAST(:cell AS float8)), floor(lon / CAST(:cell AS float8))
ORDER BY count(*) DESC, min(site_id)
