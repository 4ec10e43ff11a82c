-- Whether AACT's people tables are loaded here (Sites page): facility_investigators (named per site) and
-- overall_officials (per trial) each have a row. Params: none. Output: investigators, officials (booleans).
SELECT EXISTS (SELECT 1 FROM ctgov.facility_investigators) AS investigators,
       EXISTS (SELECT 1 FROM ctgov.overall_officials) AS officials
