-- Eligibility of one trial. Parameters: :nct_id. Output (one row, none for an unknown id): nct_id,
-- minimum_age, maximum_age, gender, healthy_volunteers, criteria (NULLs when the trial has no eligibility row).
SELECT s.nct_id,
       e.minimum_age,
       e.maximum_age,
       e.gender,
       e.healthy_volunteers,
       e.criteria
FROM ctgov.studies s
LEFT JOIN ctgov.eligibilities e ON e.nct_id = s.nct_id
WHERE s.nct_id = :nct_id
ORDER BY e.id
LIMIT 1
