-- Every study's planning dates and the actual/estimated mark of its dates and enrollment, for the in-process
-- engine's timeline and planning benchmarks (services/dashboard/facetstore.py), in row order (nct_id, byte order).
-- Parameters: none. Output: nct_id; primary_day, completion_day (days since 1970-01-01, NULL when not given);
-- start_actual, primary_actual, completion_actual, enrollment_actual: t for ACTUAL, f for ESTIMATED or ANTICIPATED
-- (every AACT era's spelling), NULL when no type is given.
SELECT s.nct_id,
       (s.primary_completion_date - DATE '1970-01-01') AS primary_day,
       (s.completion_date - DATE '1970-01-01') AS completion_day,
       CASE upper(btrim(s.start_date_type)) WHEN 'ACTUAL' THEN true WHEN 'ESTIMATED' THEN false
            WHEN 'ANTICIPATED' THEN false END AS start_actual,
       CASE upper(btrim(s.primary_completion_date_type)) WHEN 'ACTUAL' THEN true WHEN 'ESTIMATED' THEN false
            WHEN 'ANTICIPATED' THEN false END AS primary_actual,
       CASE upper(btrim(s.completion_date_type)) WHEN 'ACTUAL' THEN true WHEN 'ESTIMATED' THEN false
            WHEN 'ANTICIPATED' THEN false END AS completion_actual,
       CASE upper(btrim(s.enrollment_type)) WHEN 'ACTUAL' THEN true WHEN 'ESTIMATED' THEN false
            WHEN 'ANTICIPATED' THEN false END AS enrollment_actual
FROM ctgov.studies s
ORDER BY s.nct_id COLLATE "C"
