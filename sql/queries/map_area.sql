-- Sites of the matching trials, limited to the filter's area when asked; used as CTE "area". Needs CTE m(nct_id).
-- Params: near_lat, near_lon (NULL = no place; then miles is NULL), earth_miles, area_r (NULL = no radius limit),
-- area_min_lat, area_max_lat, area_min_lon, area_max_lon (bounding box of the radius), area_countries text[] and
-- area_states text[] (NULL = any). Output: site_id, nct_id, facility, city, state, country, lat, lon, site_status,
-- trial_status, title, miles.
SELECT x.*
FROM (
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
    FROM m
    JOIN ctgov.facilities f ON f.nct_id = m.nct_id
    JOIN ctgov.studies s ON s.nct_id = m.nct_id
    WHERE (CAST(:area_countries AS text[]) IS NULL OR f.country = ANY(CAST(:area_countries AS text[])))
      AND (CAST(:area_states AS text[]) IS NULL OR f.state = ANY(CAST(:area_states AS text[])))
      -- The box on the numeric columns themselves (as filters.near_sql): PostgreSQL has their statistics and index.
      -- On latitude::float8 it had neither, guessed one facility in the box and joined each facility in it to every
      -- matching trial one by one (27 s for a 3,000-mile radius on the 18,354-study sample). The box has slack, so
      -- the exact distance below decides either way.
      AND (CAST(:area_r AS float8) IS NULL
           OR (f.latitude BETWEEN :area_min_lat AND :area_max_lat
               AND f.longitude BETWEEN :area_min_lon AND :area_max_lon))
) x
WHERE CAST(:area_r AS float8) IS NULL OR x.miles <= CAST(:area_r AS float8)
