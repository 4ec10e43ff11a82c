-- Lead sponsor and collaborators of one study, lead first. Params: nct_id.
-- Output: role ('lead'|'collaborator'), name, agency_class.
SELECT sp.lead_or_collaborator AS role, sp.name, sp.agency_class
FROM ctgov.sponsors sp
WHERE sp.nct_id = :nct_id
ORDER BY CASE sp.lead_or_collaborator WHEN 'lead' THEN 0 ELSE 1 END, sp.id
