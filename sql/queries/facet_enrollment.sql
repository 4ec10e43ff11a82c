-- Facet: enrollment size buckets by enrollment type (actual vs anticipated). Needs CTE m(nct_id).
-- Output: value (bucket order key), enrollment_type, n.
SELECT CASE WHEN s.enrollment IS NULL THEN 0
            WHEN s.enrollment < 50 THEN 1 WHEN s.enrollment < 100 THEN 2 WHEN s.enrollment < 250 THEN 3
            WHEN s.enrollment < 500 THEN 4 WHEN s.enrollment < 1000 THEN 5 WHEN s.enrollment < 5000 THEN 6
            ELSE 7 END AS value,
       s.enrollment_type, count(*) AS n
FROM m JOIN ctgov.studies s ON s.nct_id = m.nct_id
GROUP BY 1, 2
