-- The full record of one trial for the assistant. Parameters: :nct_id.
-- Output (one row, none for an unknown id): nct_id, title, official_title, status, phase, study_type,
-- conditions[], interventions (json [{type, name}]), sponsor, collaborators[], enrollment, start_month_year,
-- start_date, completion_month_year, completion_date, summary, arms (json [{type, title, description}]),
-- primary_outcomes[], has_results.
SELECT s.nct_id,
       s.brief_title AS title,
       s.official_title,
       s.overall_status AS status,
       s.phase,
       s.study_type,
       ARRAY(SELECT c.name FROM ctgov.conditions c WHERE c.nct_id = s.nct_id ORDER BY c.id) AS conditions,
       COALESCE((SELECT json_agg(json_build_object('type', i.intervention_type, 'name', i.name) ORDER BY i.id)
                   FROM ctgov.interventions i WHERE i.nct_id = s.nct_id), '[]'::json) AS interventions,
       (SELECT sp.name FROM ctgov.sponsors sp WHERE sp.nct_id = s.nct_id AND sp.lead_or_collaborator = 'lead'
         ORDER BY sp.id LIMIT 1) AS sponsor,
       ARRAY(SELECT sp.name FROM ctgov.sponsors sp WHERE sp.nct_id = s.nct_id
               AND sp.lead_or_collaborator = 'collaborator' ORDER BY sp.id) AS collaborators,
       s.enrollment,
       s.start_month_year,
       s.start_date,
       COALESCE(s.primary_completion_month_year, s.completion_month_year) AS completion_month_year,
       COALESCE(s.primary_completion_date, s.completion_date) AS completion_date,
       (SELECT b.description FROM ctgov.brief_summaries b WHERE b.nct_id = s.nct_id ORDER BY b.id LIMIT 1) AS summary,
       COALESCE((SELECT json_agg(json_build_object('type', g.group_type, 'title', g.title,
                                                   'description', g.description) ORDER BY g.id)
                   FROM ctgov.design_groups g WHERE g.nct_id = s.nct_id), '[]'::json) AS arms,
       ARRAY(SELECT o.measure FROM ctgov.design_outcomes o WHERE o.nct_id = s.nct_id
               AND upper(o.outcome_type) = 'PRIMARY' ORDER BY o.id) AS primary_outcomes,
       (s.results_first_posted_date IS NOT NULL OR COALESCE(cv.were_results_reported, false)) AS has_results
FROM ctgov.studies s
LEFT JOIN ctgov.calculated_values cv ON cv.nct_id = s.nct_id
WHERE s.nct_id = :nct_id
