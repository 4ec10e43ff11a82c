-- Planned outcome measures of one study: primary first, then secondary, then others. Params: nct_id.
-- Output: outcome_type, measure, time_frame, description.
SELECT o.outcome_type, o.measure, o.time_frame, o.description
FROM ctgov.design_outcomes o
WHERE o.nct_id = :nct_id
ORDER BY CASE upper(o.outcome_type) WHEN 'PRIMARY' THEN 0 WHEN 'SECONDARY' THEN 1 ELSE 2 END, o.id
