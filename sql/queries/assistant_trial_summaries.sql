-- Search-result fields of the given trials for the assistant. Parameters: :ids (text[]).
-- Output: nct_id, title, status, phase, conditions[], mesh_terms[], keywords[], interventions[], sponsor, enrollment,
-- start_month_year, start_date, minimum_age, maximum_age, gender, site_count, has_criteria (the criteria text is
-- in our copy), primary_completion_date, last_update_posted_date, last_update_submitted_date.
SELECT s.nct_id,
       s.brief_title AS title,
       s.overall_status AS status,
       s.phase,
       ARRAY(SELECT c.name FROM ctgov.conditions c WHERE c.nct_id = s.nct_id ORDER BY c.id) AS conditions,
       ARRAY(SELECT b.mesh_term FROM ctgov.browse_conditions b WHERE b.nct_id = s.nct_id
             GROUP BY b.mesh_term ORDER BY min(b.id) LIMIT 30) AS mesh_terms,
       ARRAY(SELECT k.name FROM ctgov.keywords k WHERE k.nct_id = s.nct_id ORDER BY k.id) AS keywords,
       ARRAY(SELECT i.name FROM ctgov.interventions i WHERE i.nct_id = s.nct_id ORDER BY i.id) AS interventions,
       (SELECT sp.name FROM ctgov.sponsors sp WHERE sp.nct_id = s.nct_id AND sp.lead_or_collaborator = 'lead'
         ORDER BY sp.id LIMIT 1) AS sponsor,
       s.enrollment,
       s.start_month_year,
       s.start_date,
       e.minimum_age,
       e.maximum_age,
       e.gender,
       (SELECT count(*) FROM ctgov.facilities f WHERE f.nct_id = s.nct_id) AS site_count,
       (btrim(coalesce(e.criteria, '')) <> '') AS has_criteria,
       s.primary_completion_date,
       s.last_update_posted_date,
       s.last_update_submitted_date
FROM ctgov.studies s
LEFT JOIN ctgov.eligibilities e ON e.nct_id = s.nct_id
WHERE s.nct_id = ANY(CAST(:ids AS text[]))
