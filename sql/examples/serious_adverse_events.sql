-- Most frequent serious adverse events
-- Serious adverse event terms ranked by the number of participants affected across all trials.
SELECT re.adverse_event_term,
       re.organ_system,
       sum(re.subjects_affected) AS participants_affected,
       count(DISTINCT re.nct_id) AS trials
FROM ctgov.reported_events AS re
WHERE re.event_type = 'serious'
  AND re.subjects_affected > 0
GROUP BY re.adverse_event_term, re.organ_system
ORDER BY participants_affected DESC, re.adverse_event_term, re.organ_system
LIMIT 30;
