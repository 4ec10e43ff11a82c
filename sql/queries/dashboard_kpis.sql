-- KPIs of the matching studies. Needs CTE m(nct_id). Parameters: :country_spellings, :country_names (text[] of
-- equal length, geo.country_renames: a spelling and its country's one name, so "Korea, Republic of" and "South
-- Korea" count as one country). Output: matching_trials, recruiting, sites, countries, planned_enrollment.
SELECT
    (SELECT count(*) FROM m) AS matching_trials,
    st.recruiting,
    (SELECT count(*) FROM m JOIN ctgov.facilities f ON f.nct_id = m.nct_id) AS sites,
    (SELECT count(DISTINCT COALESCE(cn.name, co.name)) FROM m JOIN ctgov.countries co ON co.nct_id = m.nct_id
      AND co.removed IS NOT TRUE
      LEFT JOIN unnest(CAST(:country_spellings AS text[]), CAST(:country_names AS text[])) AS cn(spelling, name)
        ON cn.spelling = co.name) AS countries,
    st.planned_enrollment
FROM (SELECT count(*) FILTER (WHERE upper(s.overall_status) = 'RECRUITING') AS recruiting,
             COALESCE(sum(s.enrollment), 0) AS planned_enrollment
      FROM m JOIN ctgov.studies s ON s.nct_id = m.nct_id) AS st
