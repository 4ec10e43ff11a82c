-- Every study's export columns for the in-process engine's export table (facetstore.py, FacetStore.export), in
-- row order (nct_id, byte order): trials_page.sql's columns but nearest_miles (a filter's), each list aggregated
-- once per table instead of once per trial. Parameters: none. Output: nct_id, title, phase, status, conditions,
-- lead_sponsor, funder_class, enrollment, enrollment_type, start_date, primary_completion_date, sites, countries,
-- study_type, has_results.
WITH cond AS (
    SELECT nct_id, string_agg(name, '; ' ORDER BY id) AS conditions FROM ctgov.conditions GROUP BY nct_id
), fac AS (
    SELECT nct_id, count(*) AS sites FROM ctgov.facilities GROUP BY nct_id
), ctry AS (
    SELECT nct_id, string_agg(name, '; ' ORDER BY name) AS countries FROM ctgov.countries
    WHERE removed IS NOT TRUE GROUP BY nct_id
)
SELECT s.nct_id,
       s.brief_title AS title,
       s.phase,
       s.overall_status AS status,
       cond.conditions,
       sp.name AS lead_sponsor,
       sp.agency_class AS funder_class,
       s.enrollment,
       s.enrollment_type,
       s.start_date,
       s.primary_completion_date,
       COALESCE(fac.sites, 0) AS sites,
       ctry.countries,
       s.study_type,
       (s.results_first_posted_date IS NOT NULL OR COALESCE(cv.were_results_reported, false)) AS has_results
FROM ctgov.studies s
LEFT JOIN cond ON cond.nct_id = s.nct_id
LEFT JOIN fac ON fac.nct_id = s.nct_id
LEFT JOIN ctry ON ctry.nct_id = s.nct_id
LEFT JOIN ctgov.sponsors sp ON sp.nct_id = s.nct_id AND sp.lead_or_collaborator = 'lead'
LEFT JOIN ctgov.calculated_values cv ON cv.nct_id = s.nct_id
ORDER BY s.nct_id COLLATE "C"
