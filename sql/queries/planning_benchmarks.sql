-- Planning benchmarks of the matching trials, per phase and for all of them (services/dashboard/planning.py).
-- Needs CTE m(nct_id). Parameters: none. A date, or the enrollment, counts as actual unless its type says ESTIMATED
-- or ANTICIPATED (AACT's rule for calculated_values.actual_duration). Output, one row per phase plus one with
-- whole = true for all phases: whole, phase (canonical; NULL: none), trials;
-- enroll_n, enroll_estimated, enroll_missing, enroll_q (float8[3]: 25th, 50th, 75th percentile, percentile_cont);
-- duration_n, duration_no_start, duration_no_primary, duration_estimated, duration_negative, duration_q (days from
-- start to primary completion); sites_n, sites_none, sites_q (sites listed, trials with at least one);
-- rate_n, rate_q (actual enrollment × 30 / (sites × duration days), trials with all three and over 0 days);
-- closed (completed, terminated, withdrawn or suspended), terminated.
SELECT GROUPING(v.phase) = 1 AS whole, v.phase, count(*) AS trials,
       count(v.enroll_ok) AS enroll_n,
       count(*) FILTER (WHERE v.enrollment IS NOT NULL AND v.enroll_est IS TRUE) AS enroll_estimated,
       count(*) FILTER (WHERE v.enrollment IS NULL) AS enroll_missing,
       percentile_cont(ARRAY[0.25, 0.5, 0.75]) WITHIN GROUP (ORDER BY v.enroll_ok::float8) AS enroll_q,
       count(v.days_ok) AS duration_n,
       count(*) FILTER (WHERE v.start_date IS NULL) AS duration_no_start,
       count(*) FILTER (WHERE v.start_date IS NOT NULL AND v.pc IS NULL) AS duration_no_primary,
       count(*) FILTER (WHERE v.start_date IS NOT NULL AND v.pc IS NOT NULL AND v.dates_est IS TRUE)
           AS duration_estimated,
       count(*) FILTER (WHERE v.dates_est IS NOT TRUE AND v.pc < v.start_date) AS duration_negative,
       percentile_cont(ARRAY[0.25, 0.5, 0.75]) WITHIN GROUP (ORDER BY v.days_ok::float8) AS duration_q,
       count(*) FILTER (WHERE v.sites > 0) AS sites_n,
       count(*) FILTER (WHERE v.sites = 0) AS sites_none,
       percentile_cont(ARRAY[0.25, 0.5, 0.75]) WITHIN GROUP (ORDER BY v.sites::float8)
           FILTER (WHERE v.sites > 0) AS sites_q,
       count(*) FILTER (WHERE v.enroll_ok IS NOT NULL AND v.sites > 0 AND v.days_ok > 0) AS rate_n,
       percentile_cont(ARRAY[0.25, 0.5, 0.75]) WITHIN GROUP (
           ORDER BY (v.enroll_ok::float8 * 30) / (v.sites::float8 * v.days_ok::float8))
           FILTER (WHERE v.enroll_ok IS NOT NULL AND v.sites > 0 AND v.days_ok > 0) AS rate_q,
       count(*) FILTER (WHERE v.status IN ('COMPLETED', 'TERMINATED', 'WITHDRAWN', 'SUSPENDED')) AS closed,
       count(*) FILTER (WHERE v.status = 'TERMINATED') AS terminated
FROM (
    SELECT t.*,
           CASE WHEN t.enrollment IS NOT NULL AND t.enroll_est IS NOT TRUE THEN t.enrollment END AS enroll_ok,
           CASE WHEN t.start_date IS NOT NULL AND t.pc IS NOT NULL AND t.dates_est IS NOT TRUE AND t.pc >= t.start_date
                THEN t.pc - t.start_date END AS days_ok
    FROM (
        SELECT (CASE WHEN s.phase IS NULL OR btrim(s.phase) = '' THEN NULL
                     WHEN upper(s.phase) IN ('N/A', 'NOT APPLICABLE') THEN 'NA'
                     ELSE replace(replace(upper(replace(s.phase, ' ', '')), 'EARLYPHASE1', 'EARLY_PHASE1'), '|', '/')
                END) AS phase,
               (CASE WHEN upper(s.overall_status) = 'UNKNOWN STATUS' THEN 'UNKNOWN'
                     ELSE upper(regexp_replace(btrim(s.overall_status), '[^A-Za-z0-9]+', '_', 'g')) END) AS status,
               s.enrollment,
               upper(btrim(s.enrollment_type)) IN ('ESTIMATED', 'ANTICIPATED') AS enroll_est,
               s.start_date, s.primary_completion_date AS pc,
               upper(btrim(s.start_date_type)) IN ('ESTIMATED', 'ANTICIPATED')
                   OR upper(btrim(s.primary_completion_date_type)) IN ('ESTIMATED', 'ANTICIPATED') AS dates_est,
               COALESCE(f.k, 0) AS sites
        FROM m JOIN ctgov.studies s ON s.nct_id = m.nct_id
        LEFT JOIN (SELECT fa.nct_id, count(*) AS k FROM m JOIN ctgov.facilities fa ON fa.nct_id = m.nct_id
                   GROUP BY fa.nct_id) f ON f.nct_id = m.nct_id
    ) t
) v
GROUP BY GROUPING SETS ((v.phase), ())
