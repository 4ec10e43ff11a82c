-- The facility groups of the matching trials (Sites page, SQL engine): reads the CTEs m(nct_id) of matching studies and
-- keyed(facility_id, group_key) (site_keys.sql for their facilities). Params: near_lat, near_lon (NULL: no place),
-- earth_miles. Output: group_key, site_id (lowest facility id), trials and recruiting (distinct studies; a site
-- recruits when its own status says so, else its trial's), miles (nearest located site), point_id (lowest located
-- facility id); the caller adds ORDER BY and LIMIT.
, fs AS (
    SELECT k.group_key, f.id, f.nct_id,
           (f.latitude IS NOT NULL AND f.longitude IS NOT NULL) AS located,
           upper(btrim(COALESCE(NULLIF(btrim(f.status), ''), s.overall_status), ' ')) = 'RECRUITING' AS recruiting,
           CASE WHEN CAST(:near_lat AS float8) IS NULL OR f.latitude IS NULL OR f.longitude IS NULL THEN NULL
                ELSE 2 * CAST(:earth_miles AS float8) * asin(least(1, sqrt(
                     power(sin(radians((f.latitude::float8 - CAST(:near_lat AS float8)) / 2)), 2)
                     + cos(radians(CAST(:near_lat AS float8))) * cos(radians(f.latitude::float8))
                     * power(sin(radians((f.longitude::float8 - CAST(:near_lon AS float8)) / 2)), 2))))
           END AS miles
    FROM keyed k
    JOIN ctgov.facilities f ON f.id = k.facility_id
    JOIN ctgov.studies s ON s.nct_id = f.nct_id
    WHERE k.group_key IS NOT NULL
)
SELECT group_key, min(id) AS site_id, count(DISTINCT nct_id) AS trials,
       count(DISTINCT nct_id) FILTER (WHERE recruiting) AS recruiting, min(miles) AS miles,
       min(id) FILTER (WHERE located) AS point_id,
       count(*) OVER () AS n_groups, sum(count(*)) OVER () AS n_sites
FROM fs
GROUP BY group_key
