-- The matching trials with what the Trials table sorts by, for one sorted page of NCT ids. Needs CTE m(nct_id)
-- and CTE near_d(nct_id, nearest_miles). ORDER BY/LIMIT/OFFSET are appended in Python from a whitelist
-- (services/dashboard/engine.py SORTS); the same joins as trials_page.sql, so both order rows alike. Output: nct_id.
SELECT s.nct_id
FROM m
JOIN ctgov.studies s ON s.nct_id = m.nct_id
LEFT JOIN ctgov.sponsors sp ON sp.nct_id = s.nct_id AND sp.lead_or_collaborator = 'lead'
LEFT JOIN near_d nd ON nd.nct_id = s.nct_id
