-- Who to write to about one trial: its central contacts (primary first), then each site's contacts.
-- AACT's central_contacts and facility_contacts; the shipped sample has none (personal data removed).
SELECT 'central' AS kind, c.contact_type AS role, c.name, c.email, c.phone, CAST(NULL AS varchar) AS facility,
       CAST(NULL AS varchar) AS city
FROM ctgov.central_contacts c
WHERE c.nct_id = :nct_id
UNION ALL
SELECT 'site', fc.contact_type, fc.name, fc.email, fc.phone, f.name, f.city
FROM ctgov.facility_contacts fc
JOIN ctgov.facilities f ON f.id = fc.facility_id
WHERE fc.nct_id = :nct_id
ORDER BY 1, 2 DESC NULLS LAST, 3
LIMIT 200
