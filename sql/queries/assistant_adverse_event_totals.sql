-- People with any serious / other adverse event and deaths in one trial's results (reported_event_totals),
-- summed over the result groups. Parameters: :nct_id. Output: event_type ('serious', 'other', 'deaths'),
-- subjects_affected, subjects_at_risk (no rows when the trial posted none).
SELECT lower(event_type) AS event_type,
       sum(subjects_affected)::int AS subjects_affected,
       sum(subjects_at_risk)::int AS subjects_at_risk
FROM ctgov.reported_event_totals
WHERE nct_id = :nct_id AND subjects_affected IS NOT NULL
GROUP BY lower(event_type)
ORDER BY 1
