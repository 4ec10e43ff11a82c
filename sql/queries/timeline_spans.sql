-- Timeline (aggregated): how many matching trials share a phase, a start quarter and an end quarter. Needs CTE
-- m(nct_id). Parameters: none. Output: phase (canonical, e.g. PHASE1/PHASE2; NULL when none), start_q, end_q
-- (quarter numbers: year * 4 + quarter - 1; end = completion date, else primary completion date; NULL when the
-- date is not given), n.
SELECT x.phase, x.start_q, x.end_q, count(*) AS n
FROM (
    SELECT (CASE WHEN s.phase IS NULL OR btrim(s.phase) = '' THEN NULL
                 WHEN upper(s.phase) IN ('N/A', 'NOT APPLICABLE') THEN 'NA'
                 ELSE replace(replace(upper(replace(s.phase, ' ', '')), 'EARLYPHASE1', 'EARLY_PHASE1'), '|', '/')
            END) AS phase,
           extract(year FROM s.start_date)::int * 4 + (extract(month FROM s.start_date)::int - 1) / 3 AS start_q,
           extract(year FROM COALESCE(s.completion_date, s.primary_completion_date))::int * 4
               + (extract(month FROM COALESCE(s.completion_date, s.primary_completion_date))::int - 1) / 3 AS end_q
    FROM m JOIN ctgov.studies s ON s.nct_id = m.nct_id
) x
GROUP BY x.phase, x.start_q, x.end_q
