-- Adverse events posted in one trial's results, summed over the result groups. Parameters: :nct_id.
-- Output: nct_id, has_results, term, organ_system, serious, subjects_affected, subjects_at_risk
-- (no rows for an unknown id; one row with NULL term when no events were posted).
SELECT s.nct_id,
       (s.results_first_posted_date IS NOT NULL OR COALESCE(cv.were_results_reported, false)
        OR r.nct_id IS NOT NULL) AS has_results,
       r.adverse_event_term AS term,
       r.organ_system,
       lower(r.event_type) = 'serious' AS serious,
       sum(r.subjects_affected)::int AS subjects_affected,
       sum(r.subjects_at_risk)::int AS subjects_at_risk
FROM ctgov.studies s
LEFT JOIN ctgov.calculated_values cv ON cv.nct_id = s.nct_id
LEFT JOIN ctgov.reported_events r ON r.nct_id = s.nct_id
WHERE s.nct_id = :nct_id
GROUP BY s.nct_id, s.results_first_posted_date, cv.were_results_reported, r.nct_id, r.adverse_event_term,
         r.organ_system, lower(r.event_type)
ORDER BY sum(r.subjects_affected) DESC NULLS LAST, r.adverse_event_term
LIMIT 400
