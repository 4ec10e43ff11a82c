-- Assistant search: the first :limit matching trials, nearest site first when an origin is given, then
-- recruiting before not yet recruiting, newest first. Needs CTE m(nct_id). Parameters: :near_lat, :near_lon
-- (both NULL = no origin), :limit, :offset. Output: nct_id, total (matches before the limit), nearest_miles.
SELECT m.nct_id,
       count(*) OVER () AS total,
       d.nearest_miles
FROM m
JOIN ctgov.studies s ON s.nct_id = m.nct_id
LEFT JOIN LATERAL (
    SELECT min(2 * 3958.7613 * asin(least(1, sqrt(
               power(sin(radians((f.latitude::float8 - CAST(:near_lat AS float8)) / 2)), 2) +
               cos(radians(CAST(:near_lat AS float8))) * cos(radians(f.latitude::float8)) *
               power(sin(radians((f.longitude::float8 - CAST(:near_lon AS float8)) / 2)), 2))))) AS nearest_miles
    FROM ctgov.facilities f
    WHERE f.nct_id = m.nct_id AND f.latitude IS NOT NULL AND f.longitude IS NOT NULL
      AND CAST(:near_lat AS float8) IS NOT NULL
) d ON true
ORDER BY d.nearest_miles ASC NULLS LAST,
         CASE upper(replace(s.overall_status, ' ', '_'))
             WHEN 'RECRUITING' THEN 0 WHEN 'NOT_YET_RECRUITING' THEN 1 ELSE 2 END,
         s.start_date DESC NULLS LAST,
         s.nct_id
LIMIT :limit OFFSET :offset
