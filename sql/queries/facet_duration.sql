-- Facet: planned or actual duration from start to primary completion, in buckets of years.
-- Needs CTE m(nct_id). Output: value (bucket order key), n.
SELECT CASE WHEN d.months IS NULL THEN -1 WHEN d.months < 12 THEN 0 WHEN d.months < 24 THEN 1
            WHEN d.months < 36 THEN 2 WHEN d.months < 60 THEN 3 WHEN d.months < 120 THEN 4 ELSE 5 END AS value,
       count(*) AS n
FROM m JOIN ctgov.studies s ON s.nct_id = m.nct_id
CROSS JOIN LATERAL (SELECT CASE WHEN s.primary_completion_date >= s.start_date
                                THEN (s.primary_completion_date - s.start_date) / 30 END AS months) d
GROUP BY 1
