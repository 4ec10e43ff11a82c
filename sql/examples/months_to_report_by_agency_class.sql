-- Months from primary completion to results, by lead sponsor class
-- Median and mean delay before results were submitted, for trials that reported results.
SELECT sp.agency_class,
       count(*) AS trials_with_results,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY cv.months_to_report_results) AS median_months,
       round(avg(cv.months_to_report_results), 1) AS mean_months
FROM ctgov.calculated_values AS cv
JOIN ctgov.sponsors AS sp ON sp.nct_id = cv.nct_id AND sp.lead_or_collaborator = 'lead'
WHERE cv.months_to_report_results IS NOT NULL
GROUP BY sp.agency_class
ORDER BY median_months, sp.agency_class;
