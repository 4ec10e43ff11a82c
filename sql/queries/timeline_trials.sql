-- Timeline (bars): one row per matching trial with its dates and their actual/estimated marks. Needs CTE m(nct_id).
-- Parameters: none. Output: nct_id, title, phase (canonical; NULL when none), status (canonical), lead_sponsor,
-- start_date, primary_completion_date, completion_date, start_actual, primary_actual, completion_actual
-- (t: ACTUAL, f: ESTIMATED or ANTICIPATED, NULL: no type given). Ordered by NCT id.
SELECT s.nct_id, s.brief_title AS title,
       (CASE WHEN s.phase IS NULL OR btrim(s.phase) = '' THEN NULL
             WHEN upper(s.phase) IN ('N/A', 'NOT APPLICABLE') THEN 'NA'
             ELSE replace(replace(upper(replace(s.phase, ' ', '')), 'EARLYPHASE1', 'EARLY_PHASE1'), '|', '/')
        END) AS phase,
       (CASE WHEN upper(s.overall_status) = 'UNKNOWN STATUS' THEN 'UNKNOWN'
             ELSE upper(regexp_replace(btrim(s.overall_status), '[^A-Za-z0-9]+', '_', 'g')) END) AS status,
       (SELECT sp.name FROM ctgov.sponsors sp WHERE sp.nct_id = s.nct_id AND sp.lead_or_collaborator = 'lead'
        ORDER BY sp.id LIMIT 1) AS lead_sponsor,
       s.start_date, s.primary_completion_date, s.completion_date,
       CASE upper(btrim(s.start_date_type)) WHEN 'ACTUAL' THEN true WHEN 'ESTIMATED' THEN false
            WHEN 'ANTICIPATED' THEN false END AS start_actual,
       CASE upper(btrim(s.primary_completion_date_type)) WHEN 'ACTUAL' THEN true WHEN 'ESTIMATED' THEN false
            WHEN 'ANTICIPATED' THEN false END AS primary_actual,
       CASE upper(btrim(s.completion_date_type)) WHEN 'ACTUAL' THEN true WHEN 'ESTIMATED' THEN false
            WHEN 'ANTICIPATED' THEN false END AS completion_actual
FROM m JOIN ctgov.studies s ON s.nct_id = m.nct_id
ORDER BY s.nct_id
