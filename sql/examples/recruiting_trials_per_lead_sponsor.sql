-- Recruiting trials per lead sponsor
-- The 25 lead sponsors with the most trials that are recruiting now, with their agency class.
SELECT sp.name AS lead_sponsor,
       sp.agency_class,
       count(*) AS recruiting_trials
FROM ctgov.sponsors AS sp
JOIN ctgov.studies AS s ON s.nct_id = sp.nct_id
WHERE sp.lead_or_collaborator = 'lead'
  AND s.overall_status = 'RECRUITING'
GROUP BY sp.name, sp.agency_class
ORDER BY recruiting_trials DESC, lead_sponsor
LIMIT 25;
