-- KPIs and every per-study facet in one pass over the matching rows of app.study_facets.
-- Needs CTE mf (matching rows of app.study_facets). Parameters: :top_sponsors, :top_countries, :top_reasons.
-- Output: facet, value, value2, n, n2 (value2/n2 only where a facet has a second dimension).
SELECT 'kpis' AS facet, NULL::text AS value, NULL::text AS value2, count(*) AS n,
       count(*) FILTER (WHERE status = 'RECRUITING') AS n2, COALESCE(sum(n_sites), 0) AS n3,
       COALESCE(sum(enrollment), 0) AS n4
FROM mf
UNION ALL
SELECT 'countries_total', NULL, NULL, count(DISTINCT c), NULL, NULL, NULL FROM mf, unnest(country_names) c
UNION ALL
SELECT 'phase', phase_raw, NULL, count(*), NULL, NULL, NULL FROM mf GROUP BY phase_raw
UNION ALL
SELECT 'status', status, NULL, count(*), NULL, NULL, NULL FROM mf GROUP BY status
UNION ALL
SELECT 'study_type', study_type, NULL, count(*), NULL, NULL, NULL FROM mf GROUP BY study_type
UNION ALL
SELECT 'funder_class', funder_class, NULL, count(*), NULL, NULL, NULL FROM mf WHERE lead_sponsor IS NOT NULL GROUP BY funder_class
UNION ALL
SELECT 'enrollment',
       (CASE WHEN enrollment IS NULL THEN 0 WHEN enrollment < 50 THEN 1 WHEN enrollment < 100 THEN 2
             WHEN enrollment < 250 THEN 3 WHEN enrollment < 500 THEN 4 WHEN enrollment < 1000 THEN 5
             WHEN enrollment < 5000 THEN 6 ELSE 7 END)::text,
       enrollment_type, count(*), NULL, NULL, NULL
FROM mf GROUP BY 2, 3
UNION ALL
SELECT 'sex', gender, NULL, count(*), NULL, NULL, NULL FROM mf GROUP BY gender
UNION ALL
SELECT 'age_groups', g.value, NULL, count(*), NULL, NULL, NULL
FROM mf CROSS JOIN LATERAL (VALUES ('CHILD', COALESCE(min_age_years, 0) < 18),
                                   ('ADULT', COALESCE(min_age_years, 0) < 65 AND COALESCE(max_age_years, 200) >= 18),
                                   ('OLDER_ADULT', COALESCE(max_age_years, 200) >= 65)) AS g(value, ok)
WHERE g.ok GROUP BY g.value
UNION ALL
SELECT 'intervention_types', t, NULL, count(*), NULL, NULL, NULL FROM mf, unnest(intervention_types) t GROUP BY t
UNION ALL
SELECT 'duration', duration_bucket::text, NULL, count(*), NULL, NULL, NULL FROM mf GROUP BY duration_bucket
UNION ALL
SELECT 'start_year', start_year::text, NULL, count(*), NULL, NULL, NULL FROM mf WHERE start_year IS NOT NULL GROUP BY start_year
UNION ALL
SELECT 'sites_per_trial',
       (CASE WHEN n_sites = 0 THEN 0 WHEN n_sites = 1 THEN 1 WHEN n_sites <= 5 THEN 2 WHEN n_sites <= 20 THEN 3
             WHEN n_sites <= 100 THEN 4 ELSE 5 END)::text, NULL, count(*), NULL, NULL, NULL
FROM mf GROUP BY 2
UNION ALL
(SELECT 'countries', c, NULL, count(*), NULL, NULL, NULL FROM mf, unnest(country_names) c
 GROUP BY c ORDER BY count(*) DESC, c COLLATE "C" LIMIT :top_countries)
UNION ALL
SELECT 'us_states', st, NULL, count(*), NULL, NULL, NULL FROM mf, unnest(us_states) st GROUP BY st
UNION ALL
(SELECT 'why_stopped', why_stopped, NULL, count(*), NULL, NULL, NULL FROM mf WHERE why_stopped IS NOT NULL
 GROUP BY why_stopped ORDER BY count(*) DESC, why_stopped COLLATE "C" LIMIT :top_reasons)
UNION ALL
SELECT 'results_by_year', finish_year::text, NULL, count(*), count(*) FILTER (WHERE has_results), NULL, NULL
FROM mf WHERE finish_year IS NOT NULL GROUP BY finish_year
UNION ALL
(SELECT 'lead_sponsors', lead_sponsor, NULL, count(*), NULL, NULL, NULL FROM mf WHERE lead_sponsor IS NOT NULL
 GROUP BY lead_sponsor ORDER BY count(*) DESC, lead_sponsor COLLATE "C" LIMIT :top_sponsors)
UNION ALL
SELECT 'collaboration_mix',
       (CASE WHEN n_collaborators = 0 THEN 0 WHEN n_collaborators = 1 THEN 1 WHEN n_collaborators <= 3 THEN 2 ELSE 3 END)::text,
       NULL, count(*), NULL, NULL, NULL
FROM mf GROUP BY 2
