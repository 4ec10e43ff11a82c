-- Investigators named at chosen sites (AACT's facility_investigators), for the Sites page's in-process engine.
-- Params: ids integer[] (facility ids). Output: facility_id, value (the investigator's name, trimmed).
SELECT fi.facility_id, btrim(fi.name) AS value
FROM ctgov.facility_investigators fi
WHERE fi.facility_id = ANY(CAST(:ids AS integer[])) AND NULLIF(btrim(fi.name), '') IS NOT NULL
