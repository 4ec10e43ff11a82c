-- Trials registered per year
-- New registrations per calendar year with a running total and the change from the year before.
WITH yearly AS (
    SELECT extract(year FROM s.study_first_submitted_date)::int AS year,
           count(*) AS registered
    FROM ctgov.studies AS s
    WHERE s.study_first_submitted_date IS NOT NULL
    GROUP BY 1
)
SELECT year,
       registered,
       sum(registered) OVER (ORDER BY year) AS running_total,
       registered - lag(registered) OVER (ORDER BY year) AS change_from_previous_year
FROM yearly
ORDER BY year;
