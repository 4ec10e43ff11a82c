-- Facet: results-reporting rate by completion year, among completed or terminated studies.
-- Needs CTE m(nct_id). Output: value (year), n (finished studies), with_results.
SELECT extract(year FROM COALESCE(s.primary_completion_date, s.completion_date))::int AS value,
       count(*) AS n,
       count(*) FILTER (WHERE s.results_first_posted_date IS NOT NULL OR cv.were_results_reported) AS with_results
FROM m JOIN ctgov.studies s ON s.nct_id = m.nct_id
LEFT JOIN ctgov.calculated_values cv ON cv.nct_id = s.nct_id
WHERE upper(s.overall_status) IN ('COMPLETED', 'TERMINATED')
  AND COALESCE(s.primary_completion_date, s.completion_date) IS NOT NULL
GROUP BY 1
ORDER BY 1
