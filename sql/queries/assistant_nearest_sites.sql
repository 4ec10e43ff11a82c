-- The site of each given trial closest to a point, with its own status (the card says when that status is closed:
-- services.trials.site_status_note). Parameters: :ids (text[]), :near_lat, :near_lon.
-- Output: nct_id, facility, city, state, country, status, distance_miles.
SELECT DISTINCT ON (f.nct_id)
       f.nct_id,
       f.name AS facility,
       f.city,
       f.state,
       f.country,
       f.status,
       2 * 3958.7613 * asin(least(1, sqrt(
           power(sin(radians((f.latitude::float8 - CAST(:near_lat AS float8)) / 2)), 2) +
           cos(radians(CAST(:near_lat AS float8))) * cos(radians(f.latitude::float8)) *
           power(sin(radians((f.longitude::float8 - CAST(:near_lon AS float8)) / 2)), 2)))) AS distance_miles
FROM ctgov.facilities f
WHERE f.nct_id = ANY(CAST(:ids AS text[])) AND f.latitude IS NOT NULL AND f.longitude IS NOT NULL
ORDER BY f.nct_id, distance_miles, f.id
