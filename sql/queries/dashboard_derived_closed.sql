-- How matching trials ended, over app.study_facets with the status filter left out (closed trials only count).
-- Needs CTE mf (matching rows of app.study_facets, any status). Parameters: :top_reasons.
-- Output: facet, value, value2, n, n2 (the shape of dashboard_derived.sql).
SELECT 'status' AS facet, status AS value, NULL::text AS value2, count(*) AS n, NULL::bigint AS n2
FROM mf WHERE status IN ('COMPLETED', 'TERMINATED', 'WITHDRAWN', 'SUSPENDED') GROUP BY status
UNION ALL
(SELECT 'why_stopped', why_stopped, NULL, count(*), NULL FROM mf WHERE why_stopped IS NOT NULL
 GROUP BY why_stopped ORDER BY count(*) DESC, why_stopped COLLATE "C" LIMIT :top_reasons)
UNION ALL
SELECT 'results_by_year', finish_year::text, NULL, count(*), count(*) FILTER (WHERE has_results)
FROM mf WHERE finish_year IS NOT NULL GROUP BY finish_year
