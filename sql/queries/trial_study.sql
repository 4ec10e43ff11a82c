-- One study with its design, eligibility fields, summaries and calculated values. Params: nct_id.
-- Output: nct_id, title, official_title, acronym, phase, status, last_known_status, why_stopped, study_type,
-- enrollment, enrollment_type, study_first_posted_date, start_date, start_date_type, primary_completion_date,
-- primary_completion_date_type, completion_date, completion_date_type, last_update_posted_date, last_update_submitted_date,
-- results_first_posted_date, number_of_arms, number_of_groups, has_results, allocation, intervention_model,
-- observational_model, primary_purpose, masking, time_perspective, gender, minimum_age, maximum_age,
-- healthy_volunteers, population, sampling_method, criteria, brief_summary, detailed_description.
SELECT s.nct_id,
       s.brief_title AS title,
       s.official_title,
       s.acronym,
       s.phase,
       s.overall_status AS status,
       s.last_known_status,
       s.why_stopped,
       s.study_type,
       s.enrollment,
       s.enrollment_type,
       s.study_first_posted_date,
       s.start_date,
       s.start_date_type,
       s.primary_completion_date,
       s.primary_completion_date_type,
       s.completion_date,
       s.completion_date_type,
       s.last_update_posted_date,
       s.last_update_submitted_date,
       s.results_first_posted_date,
       s.number_of_arms,
       s.number_of_groups,
       (s.results_first_posted_date IS NOT NULL OR COALESCE(cv.were_results_reported, false)) AS has_results,
       d.allocation,
       d.intervention_model,
       d.observational_model,
       d.primary_purpose,
       d.masking,
       d.time_perspective,
       e.gender,
       e.minimum_age,
       e.maximum_age,
       e.healthy_volunteers,
       e.population,
       e.sampling_method,
       e.criteria,
       (SELECT string_agg(b.description, E'\n\n' ORDER BY b.id) FROM ctgov.brief_summaries b
         WHERE b.nct_id = s.nct_id) AS brief_summary,
       (SELECT string_agg(dd.description, E'\n\n' ORDER BY dd.id) FROM ctgov.detailed_descriptions dd
         WHERE dd.nct_id = s.nct_id) AS detailed_description
FROM ctgov.studies s
LEFT JOIN ctgov.calculated_values cv ON cv.nct_id = s.nct_id
LEFT JOIN LATERAL (SELECT * FROM ctgov.designs d0 WHERE d0.nct_id = s.nct_id ORDER BY d0.id LIMIT 1) d ON true
LEFT JOIN LATERAL (SELECT * FROM ctgov.eligibilities e0 WHERE e0.nct_id = s.nct_id ORDER BY e0.id LIMIT 1) e ON true
WHERE s.nct_id = :nct_id
