-- The shown columns of chosen sites (the in-process map engine picks them; this fetches names and titles).
-- Params: ids bigint[], near_lat, near_lon (NULL = no place), earth_miles. Output: the columns of map_site_points.sql.
SELECT f.id AS site_id,
       f.nct_id,
       f.name AS facility,
       f.city,
       f.state,
       f.country,
       f.latitude::float8 AS lat,
       f.longitude::float8 AS lon,
       NULLIF(btrim(f.status), '') AS site_status,
       s.overall_status AS trial_status,
       s.brief_title AS title,
       CASE WHEN CAST(:near_lat AS float8) IS NULL OR f.latitude IS NULL THEN NULL
            ELSE 2 * CAST(:earth_miles AS float8) * asin(least(1, sqrt(
                 power(sin(radians((f.latitude::float8 - CAST(:near_lat AS float8)) / 2)), 2)
                 + cos(radians(CAST(:near_lat AS float8))) * cos(radians(f.latitude::float8))
                 * power(sin(radians((f.longitude::float8 - CAST(:near_lon AS float8)) / 2)), 2))))
       END AS miles
FROM ctgov.facilities f
JOIN ctgov.studies s ON s.nct_id = f.nct_id
WHERE f.id = ANY(CAST(:ids AS bigint[]))
ORDER BY f.id
