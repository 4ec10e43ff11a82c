-- Matching trials with the columns of the Trials table and exports. Needs CTE m(nct_id) and, when a place is set,
-- CTE near_d(nct_id, nearest_miles). The ORDER BY/LIMIT are appended in Python from a whitelist.
-- Output: nct_id, title, phase, status, conditions, lead_sponsor, funder_class, enrollment, enrollment_type,
-- start_date, primary_completion_date, sites, countries, nearest_miles, study_type, has_results.
SELECT s.nct_id,
       s.brief_title AS title,
       s.phase,
       s.overall_status AS status,
       (SELECT string_agg(c.name, '; ' ORDER BY c.id) FROM ctgov.conditions c WHERE c.nct_id = s.nct_id) AS conditions,
       sp.name AS lead_sponsor,
       sp.agency_class AS funder_class,
       s.enrollment,
       s.enrollment_type,
       s.start_date,
       s.primary_completion_date,
       (SELECT count(*) FROM ctgov.facilities f WHERE f.nct_id = s.nct_id) AS sites,
       (SELECT string_agg(co.name, '; ' ORDER BY co.name) FROM ctgov.countries co
         WHERE co.nct_id = s.nct_id AND co.removed IS NOT TRUE) AS countries,
       nd.nearest_miles,
       s.study_type,
       (s.results_first_posted_date IS NOT NULL OR COALESCE(cv.were_results_reported, false)) AS has_results
FROM m
JOIN ctgov.studies s ON s.nct_id = m.nct_id
LEFT JOIN ctgov.sponsors sp ON sp.nct_id = s.nct_id AND sp.lead_or_collaborator = 'lead'
LEFT JOIN ctgov.calculated_values cv ON cv.nct_id = s.nct_id
LEFT JOIN near_d nd ON nd.nct_id = s.nct_id
