-- Most studied conditions among recruiting trials
-- The 30 conditions named by the most trials that are recruiting now.
SELECT c.downcase_name AS condition,
       count(DISTINCT c.nct_id) AS recruiting_trials
FROM ctgov.conditions AS c
JOIN ctgov.studies AS s ON s.nct_id = c.nct_id
WHERE s.overall_status = 'RECRUITING'
GROUP BY c.downcase_name
ORDER BY recruiting_trials DESC, condition
LIMIT 30;
