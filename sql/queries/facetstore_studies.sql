-- Every row of app.study_facets for the in-process facet engine (services/dashboard/facetstore.py), in row order
-- (nct_id, byte order). Parameters: none. Output: one column per filter/facet input; age limits already in the
-- float8 form the filters compare with, age-group flags computed on the exact numeric limits; start_day is the
-- start date as days since 1970-01-01 and the *_rank columns the order of the title, phase, status and lead
-- sponsor texts (NULL stays NULL): the Trials table sorts by them.
WITH ranks AS (  -- where each study falls when the Trials table sorts by a text column (the database's collation)
    SELECT s.nct_id,
           CASE WHEN s.brief_title IS NULL THEN NULL ELSE dense_rank() OVER (ORDER BY s.brief_title) END AS title_rank,
           CASE WHEN s.phase IS NULL THEN NULL ELSE dense_rank() OVER (ORDER BY s.phase) END AS phase_rank,
           CASE WHEN s.overall_status IS NULL THEN NULL
                ELSE dense_rank() OVER (ORDER BY s.overall_status) END AS status_rank
    FROM ctgov.studies s
)
SELECT nct_id, status, array_to_string(phases, '/') AS phases, phase_raw, study_type, funder_class, lead_sponsor,
       lower(lead_sponsor) AS lead_lower, enrollment, enrollment_type, start_year,
       (start_date - DATE '1970-01-01') AS start_day, duration_bucket,
       min_age_years::float8 AS age_lo,
       (max_age_years + (CASE WHEN max_age_in_years THEN 1 ELSE 0 END))::float8 AS age_hi,
       (COALESCE(min_age_years, 0) < 18) AS g_child,
       (COALESCE(min_age_years, 0) < 65 AND COALESCE(max_age_years, 200) >= 18) AS g_adult,
       (COALESCE(max_age_years, 200) >= 65) AS g_older,
       gender, upper(gender) AS gender_upper, healthy, has_results, finish_year, n_sites, n_collaborators, why_stopped,
       title_rank, phase_rank, status_rank,
       CASE WHEN lead_sponsor IS NULL THEN NULL ELSE dense_rank() OVER (ORDER BY lead_sponsor) END AS sponsor_rank
FROM app.study_facets
JOIN ranks USING (nct_id)
ORDER BY nct_id COLLATE "C"
