-- Median enrollment by phase
-- Median and interquartile range of enrollment per phase; observational studies have no phase.
SELECT s.phase,
       count(*) AS trials,
       percentile_cont(0.25) WITHIN GROUP (ORDER BY s.enrollment) AS q1_enrollment,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY s.enrollment) AS median_enrollment,
       percentile_cont(0.75) WITHIN GROUP (ORDER BY s.enrollment) AS q3_enrollment
FROM ctgov.studies AS s
WHERE s.phase IS NOT NULL
  AND s.enrollment IS NOT NULL
GROUP BY s.phase
ORDER BY s.phase;
