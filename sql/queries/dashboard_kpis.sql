-- KPIs of the matching studies. Needs CTE m(nct_id). Output: matching_trials, recruiting, sites, countries,
-- planned_enrollment.
SELECT
    (SELECT count(*) FROM m) AS matching_trials,
    (SELECT count(*) FROM m JOIN ctgov.studies s ON s.nct_id = m.nct_id
      WHERE upper(s.overall_status) = 'RECRUITING') AS recruiting,
    (SELECT count(*) FROM m JOIN ctgov.facilities f ON f.nct_id = m.nct_id) AS sites,
    (SELECT count(DISTINCT co.name) FROM m JOIN ctgov.countries co ON co.nct_id = m.nct_id
      AND co.removed IS NOT TRUE) AS countries,
    (SELECT COALESCE(sum(s.enrollment), 0) FROM m JOIN ctgov.studies s ON s.nct_id = m.nct_id) AS planned_enrollment
