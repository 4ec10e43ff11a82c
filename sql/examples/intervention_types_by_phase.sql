-- Intervention types by phase
-- How many interventions of each type the trials of each phase test.
SELECT s.phase,
       i.intervention_type,
       count(*) AS interventions,
       count(DISTINCT i.nct_id) AS trials
FROM ctgov.interventions AS i
JOIN ctgov.studies AS s ON s.nct_id = i.nct_id
WHERE s.phase IS NOT NULL
GROUP BY s.phase, i.intervention_type
ORDER BY s.phase, interventions DESC, i.intervention_type;
