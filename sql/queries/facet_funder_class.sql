-- Facet: studies per lead sponsor class (normalised in Python). Needs CTE m(nct_id). Output: value, n.
SELECT sp.agency_class AS value, count(*) AS n
FROM m JOIN ctgov.sponsors sp ON sp.nct_id = m.nct_id AND sp.lead_or_collaborator = 'lead'
GROUP BY sp.agency_class
