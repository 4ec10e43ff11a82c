-- AACT's views and helper functions in schema ctgov (same names, columns and meaning as on AACT), plus
-- v_* views that spell values the classic (pre-2024) way so older queries have an easy path. Idempotent.

-- One row per study: the distinct (or all) values of a column joined by '|', as AACT's all_* views.
CREATE OR REPLACE VIEW ctgov.all_browse_conditions AS
    SELECT nct_id, array_to_string(array_agg(DISTINCT mesh_term), '|') AS names
    FROM ctgov.browse_conditions GROUP BY nct_id;
CREATE OR REPLACE VIEW ctgov.all_browse_interventions AS
    SELECT nct_id, array_to_string(array_agg(mesh_term), '|') AS names
    FROM ctgov.browse_interventions GROUP BY nct_id;
CREATE OR REPLACE VIEW ctgov.all_cities AS
    SELECT nct_id, array_to_string(array_agg(DISTINCT city), '|') AS names
    FROM ctgov.facilities GROUP BY nct_id;
CREATE OR REPLACE VIEW ctgov.all_conditions AS
    SELECT nct_id, array_to_string(array_agg(DISTINCT name), '|') AS names
    FROM ctgov.conditions GROUP BY nct_id;
CREATE OR REPLACE VIEW ctgov.all_countries AS
    SELECT nct_id, array_to_string(array_agg(DISTINCT name), '|') AS names
    FROM ctgov.countries WHERE removed IS NOT TRUE GROUP BY nct_id;
CREATE OR REPLACE VIEW ctgov.all_design_outcomes AS
    SELECT nct_id, array_to_string(array_agg(DISTINCT measure), '|') AS names
    FROM ctgov.design_outcomes GROUP BY nct_id;
CREATE OR REPLACE VIEW ctgov.all_facilities AS
    SELECT nct_id, array_to_string(array_agg(name), '|') AS names
    FROM ctgov.facilities GROUP BY nct_id;
CREATE OR REPLACE VIEW ctgov.all_group_types AS
    SELECT nct_id, array_to_string(array_agg(DISTINCT group_type), '|') AS names
    FROM ctgov.design_groups GROUP BY nct_id;
CREATE OR REPLACE VIEW ctgov.all_id_information AS
    SELECT nct_id, array_to_string(array_agg(DISTINCT id_value), '|') AS names
    FROM ctgov.id_information GROUP BY nct_id;
CREATE OR REPLACE VIEW ctgov.all_intervention_types AS
    SELECT nct_id, array_to_string(array_agg(intervention_type), '|') AS names
    FROM ctgov.interventions GROUP BY nct_id;
CREATE OR REPLACE VIEW ctgov.all_interventions AS
    SELECT nct_id, array_to_string(array_agg(name), '|') AS names
    FROM ctgov.interventions GROUP BY nct_id;
CREATE OR REPLACE VIEW ctgov.all_keywords AS
    SELECT nct_id, array_to_string(array_agg(DISTINCT name), '|') AS names
    FROM ctgov.keywords GROUP BY nct_id;
CREATE OR REPLACE VIEW ctgov.all_overall_official_affiliations AS
    SELECT nct_id, array_to_string(array_agg(affiliation), '|') AS names
    FROM ctgov.overall_officials GROUP BY nct_id;
CREATE OR REPLACE VIEW ctgov.all_overall_officials AS
    SELECT nct_id, array_to_string(array_agg(name), '|') AS names
    FROM ctgov.overall_officials GROUP BY nct_id;
CREATE OR REPLACE VIEW ctgov.all_primary_outcome_measures AS
    SELECT nct_id, array_to_string(array_agg(DISTINCT measure), '|') AS names
    FROM ctgov.design_outcomes WHERE outcome_type = 'primary' GROUP BY nct_id;
CREATE OR REPLACE VIEW ctgov.all_secondary_outcome_measures AS
    SELECT nct_id, array_to_string(array_agg(DISTINCT measure), '|') AS names
    FROM ctgov.design_outcomes WHERE outcome_type = 'secondary' GROUP BY nct_id;
CREATE OR REPLACE VIEW ctgov.all_sponsors AS
    SELECT nct_id, array_to_string(array_agg(DISTINCT name), '|') AS names
    FROM ctgov.sponsors GROUP BY nct_id;
CREATE OR REPLACE VIEW ctgov.all_states AS
    SELECT nct_id, array_to_string(array_agg(DISTINCT state), '|') AS names
    FROM ctgov.facilities GROUP BY nct_id;

-- AACT keeps its named study searches (e.g. 'covid-19') in search_results; `categories` is the old name.
CREATE OR REPLACE VIEW ctgov.categories AS
    SELECT id, nct_id, name, created_at, updated_at, "grouping", study_search_id FROM ctgov.search_results;

CREATE OR REPLACE VIEW ctgov.covid_19_studies AS
    SELECT s.nct_id, s.overall_status, s.study_type, s.official_title, s.acronym, s.phase, s.why_stopped,
           s.has_dmc, s.enrollment, s.is_fda_regulated_device, s.is_fda_regulated_drug, s.is_unapproved_device,
           s.has_expanded_access, s.study_first_submitted_date, s.last_update_posted_date,
           s.results_first_posted_date, s.start_date, s.primary_completion_date, s.completion_date,
           s.study_first_posted_date, cv.number_of_facilities, cv.has_single_facility, cv.nlm_download_date,
           s.number_of_arms, s.number_of_groups, sp.name AS lead_sponsor, aid.names AS other_ids,
           e.gender, e.gender_based, e.gender_description, e.population, e.minimum_age, e.maximum_age,
           e.criteria, e.healthy_volunteers, ak.names AS keywords, ai.names AS interventions,
           ac.names AS conditions, d.primary_purpose, d.allocation, d.observational_model, d.intervention_model,
           d.masking, d.subject_masked, d.caregiver_masked, d.investigator_masked, d.outcomes_assessor_masked,
           ado.names AS design_outcomes, bs.description AS brief_summary, dd.description AS detailed_description
    FROM ctgov.studies s
    FULL JOIN ctgov.all_conditions ac ON s.nct_id = ac.nct_id
    FULL JOIN ctgov.all_id_information aid ON s.nct_id = aid.nct_id
    FULL JOIN ctgov.all_design_outcomes ado ON s.nct_id = ado.nct_id
    FULL JOIN ctgov.all_keywords ak ON s.nct_id = ak.nct_id
    FULL JOIN ctgov.all_interventions ai ON s.nct_id = ai.nct_id
    FULL JOIN ctgov.sponsors sp ON s.nct_id = sp.nct_id
    FULL JOIN ctgov.calculated_values cv ON s.nct_id = cv.nct_id
    FULL JOIN ctgov.designs d ON s.nct_id = d.nct_id
    FULL JOIN ctgov.eligibilities e ON s.nct_id = e.nct_id
    FULL JOIN ctgov.brief_summaries bs ON s.nct_id = bs.nct_id
    FULL JOIN ctgov.detailed_descriptions dd ON s.nct_id = dd.nct_id
    WHERE sp.lead_or_collaborator = 'lead'
      AND s.nct_id IN (SELECT nct_id FROM ctgov.search_results WHERE name = 'covid-19');

-- Studies whose MeSH terms, title or keywords match a LIKE pattern (AACT's ids_for_term).
CREATE OR REPLACE FUNCTION ctgov.ids_for_term(character varying) RETURNS TABLE(nct_id character varying)
    LANGUAGE sql STABLE AS $fn$
        SELECT DISTINCT nct_id FROM ctgov.browse_conditions WHERE downcase_mesh_term LIKE lower($1)
        UNION SELECT DISTINCT nct_id FROM ctgov.browse_interventions WHERE downcase_mesh_term LIKE lower($1)
        UNION SELECT DISTINCT nct_id FROM ctgov.studies WHERE lower(brief_title) LIKE lower($1)
        UNION SELECT DISTINCT nct_id FROM ctgov.keywords WHERE lower(name) LIKE lower($1)
    $fn$;

-- Studies whose responsible party, site, sponsor or results contact matches an organisation pattern (ids_for_org).
CREATE OR REPLACE FUNCTION ctgov.ids_for_org(character varying) RETURNS TABLE(nct_id character varying)
    LANGUAGE sql STABLE AS $fn$
        SELECT DISTINCT nct_id FROM ctgov.responsible_parties WHERE lower(affiliation) LIKE lower($1)
        UNION SELECT DISTINCT nct_id FROM ctgov.facilities
              WHERE lower(name) LIKE lower($1) OR lower(city) LIKE lower($1) OR lower(state) LIKE lower($1)
                 OR lower(country) LIKE lower($1)
        UNION SELECT DISTINCT nct_id FROM ctgov.sponsors WHERE lower(name) LIKE lower($1)
        UNION SELECT DISTINCT nct_id FROM ctgov.result_contacts WHERE lower(organization) LIKE lower($1)
    $fn$;

-- Classic spellings (ClinicalTrials.gov's classic API, AACT before 2024-06) of today's enum values:
-- 'RECRUITING' → 'Recruiting', 'ACTIVE_NOT_RECRUITING' → 'Active, not recruiting', 'PHASE1/PHASE2' →
-- 'Phase 1/Phase 2', 'ESTIMATED' → 'Anticipated'. `kind` picks the rules: status, phase, type, title.
CREATE OR REPLACE FUNCTION ctgov.classic_spelling(kind text, value text) RETURNS text
    LANGUAGE sql IMMUTABLE AS $fn$
        SELECT CASE
            WHEN value IS NULL THEN NULL
            WHEN kind = 'status' THEN CASE value
                WHEN 'ACTIVE_NOT_RECRUITING' THEN 'Active, not recruiting'
                WHEN 'UNKNOWN' THEN 'Unknown status'
                ELSE upper(left(value, 1)) || lower(replace(substr(value, 2), '_', ' ')) END
            WHEN kind = 'phase' THEN CASE value
                WHEN 'NA' THEN 'Not Applicable'
                ELSE replace(replace(replace(value, 'EARLY_PHASE', 'Early Phase '), 'PHASE', 'Phase '), '  ', ' ') END
            WHEN kind = 'type' THEN CASE value
                WHEN 'ESTIMATED' THEN 'Anticipated'
                WHEN 'NA' THEN 'N/A'
                WHEN 'NONE' THEN 'None (Open Label)'
                WHEN 'NON_RANDOMIZED' THEN 'Non-Randomized'
                ELSE initcap(replace(value, '_', ' ')) END
            ELSE initcap(replace(value, '_', ' '))
        END
    $fn$;

-- v_<table>: the same columns, enum values spelled the classic way, so `WHERE overall_status = 'Recruiting'`
-- from older AACT queries works against ctgov.v_studies unchanged (apart from the table name).
CREATE OR REPLACE VIEW ctgov.v_studies AS
    SELECT s.nct_id, s.nlm_download_date_description, s.study_first_submitted_date, s.results_first_submitted_date,
           s.disposition_first_submitted_date, s.last_update_submitted_date, s.study_first_submitted_qc_date,
           s.study_first_posted_date, s.study_first_posted_date_type, s.results_first_submitted_qc_date,
           s.results_first_posted_date, s.results_first_posted_date_type, s.disposition_first_submitted_qc_date,
           s.disposition_first_posted_date, s.disposition_first_posted_date_type, s.last_update_submitted_qc_date,
           s.last_update_posted_date, s.last_update_posted_date_type, s.start_month_year,
           ctgov.classic_spelling('type', s.start_date_type) AS start_date_type, s.start_date,
           s.verification_month_year, s.verification_date, s.completion_month_year,
           ctgov.classic_spelling('type', s.completion_date_type) AS completion_date_type, s.completion_date,
           s.primary_completion_month_year,
           ctgov.classic_spelling('type', s.primary_completion_date_type) AS primary_completion_date_type,
           s.primary_completion_date, s.target_duration,
           CASE WHEN s.study_type = 'OBSERVATIONAL' AND s.patient_registry
                THEN 'Observational [Patient Registry]' ELSE ctgov.classic_spelling('title', s.study_type) END AS study_type,
           s.acronym, s.baseline_population, s.brief_title, s.official_title,
           ctgov.classic_spelling('status', s.overall_status) AS overall_status,
           ctgov.classic_spelling('status', s.last_known_status) AS last_known_status,
           ctgov.classic_spelling('phase', s.phase) AS phase, s.enrollment,
           ctgov.classic_spelling('type', s.enrollment_type) AS enrollment_type, s.source,
           s.limitations_and_caveats, s.number_of_arms, s.number_of_groups, s.why_stopped, s.has_expanded_access,
           s.expanded_access_type_individual, s.expanded_access_type_intermediate,
           s.expanded_access_type_treatment, s.has_dmc, s.is_fda_regulated_drug, s.is_fda_regulated_device,
           s.is_unapproved_device, s.is_ppsd, s.is_us_export, s.biospec_retention, s.biospec_description,
           s.ipd_time_frame, s.ipd_access_criteria, s.ipd_url, s.plan_to_share_ipd,
           s.plan_to_share_ipd_description, s.created_at, s.updated_at, s.source_class, s.delayed_posting,
           s.expanded_access_nctid, s.expanded_access_status_for_nctid, s.fdaaa801_violation,
           s.baseline_type_units_analyzed, s.patient_registry
    FROM ctgov.studies s;
CREATE OR REPLACE VIEW ctgov.v_eligibilities AS
    SELECT s.id, s.nct_id, s.sampling_method, ctgov.classic_spelling('title', s.gender) AS gender, s.minimum_age,
           s.maximum_age, s.healthy_volunteers, s.population, s.criteria, s.gender_description, s.gender_based,
           s.adult, s.child, s.older_adult
    FROM ctgov.eligibilities s;
CREATE OR REPLACE VIEW ctgov.v_interventions AS
    SELECT s.id, s.nct_id, ctgov.classic_spelling('title', s.intervention_type) AS intervention_type, s.name,
           s.description
    FROM ctgov.interventions s;
CREATE OR REPLACE VIEW ctgov.v_design_groups AS
    SELECT s.id, s.nct_id, ctgov.classic_spelling('title', s.group_type) AS group_type, s.title, s.description
    FROM ctgov.design_groups s;
CREATE OR REPLACE VIEW ctgov.v_designs AS
    SELECT s.id, s.nct_id, ctgov.classic_spelling('type', s.allocation) AS allocation,
           ctgov.classic_spelling('title', s.intervention_model) AS intervention_model,
           ctgov.classic_spelling('title', s.observational_model) AS observational_model,
           ctgov.classic_spelling('title', s.primary_purpose) AS primary_purpose,
           ctgov.classic_spelling('title', s.time_perspective) AS time_perspective,
           ctgov.classic_spelling('type', s.masking) AS masking, s.masking_description,
           s.intervention_model_description, s.subject_masked, s.caregiver_masked, s.investigator_masked,
           s.outcomes_assessor_masked
    FROM ctgov.designs s;
CREATE OR REPLACE VIEW ctgov.v_outcomes AS
    SELECT s.id, s.nct_id, ctgov.classic_spelling('title', s.outcome_type) AS outcome_type, s.title, s.description,
           s.time_frame, s.population, s.anticipated_posting_date, s.anticipated_posting_month_year, s.units,
           s.units_analyzed, s.dispersion_type, s.param_type
    FROM ctgov.outcomes s;
