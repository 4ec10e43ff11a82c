-- Every row of app.study_facets for the in-process facet engine (services/facetstore.py), in row order
-- (nct_id, byte order). Parameters: none. Output: one column per filter/facet input; age limits already in the
-- float8 form the filters compare with, age-group flags computed on the exact numeric limits; start_day is the
-- start date as days since 1970-01-01 (the Trials table sorts by it).
SELECT nct_id, status, array_to_string(phases, '/') AS phases, phase_raw, study_type, funder_class, lead_sponsor,
       lower(lead_sponsor) AS lead_lower, enrollment, enrollment_type, start_year,
       (start_date - DATE '1970-01-01') AS start_day, duration_bucket,
       min_age_years::float8 AS age_lo,
       (max_age_years + (CASE WHEN max_age_in_years THEN 1 ELSE 0 END))::float8 AS age_hi,
       (COALESCE(min_age_years, 0) < 18) AS g_child,
       (COALESCE(min_age_years, 0) < 65 AND COALESCE(max_age_years, 200) >= 18) AS g_adult,
       (COALESCE(max_age_years, 200) >= 65) AS g_older,
       gender, upper(gender) AS gender_upper, healthy, has_results, finish_year, n_sites, n_collaborators, why_stopped
FROM app.study_facets
ORDER BY nct_id COLLATE "C"
