-- Every site of one trial. Parameters: :nct_id. Output: nct_id, facility, city, state, country, status,
-- latitude, longitude; no rows for an unknown id, one row of NULL site fields for a trial without sites.
SELECT s.nct_id,
       f.name AS facility,
       f.city,
       f.state,
       f.country,
       f.status,
       f.latitude::float8 AS latitude,
       f.longitude::float8 AS longitude
FROM ctgov.studies s
LEFT JOIN ctgov.facilities f ON f.nct_id = s.nct_id
WHERE s.nct_id = :nct_id
ORDER BY f.id
