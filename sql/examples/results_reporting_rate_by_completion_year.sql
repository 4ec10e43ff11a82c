-- Results-reporting rate by completion year
-- Share of completed trials that posted results on ClinicalTrials.gov, by year of completion.
SELECT extract(year FROM s.completion_date)::int AS completion_year,
       count(*) AS completed_trials,
       count(*) FILTER (WHERE cv.were_results_reported) AS with_results,
       round(100.0 * count(*) FILTER (WHERE cv.were_results_reported) / count(*), 1) AS percent_reported
FROM ctgov.studies AS s
JOIN ctgov.calculated_values AS cv ON cv.nct_id = s.nct_id
WHERE s.overall_status = 'COMPLETED'
  AND s.completion_date IS NOT NULL
GROUP BY completion_year
ORDER BY completion_year;
