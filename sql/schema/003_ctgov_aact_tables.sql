-- AACT's other study tables (results, contacts, references …) and in-place upgrade of older databases. Idempotent.
-- Tables as in AACT's db/ctgov_v2.sql + 2024 migrations; services/data/loaders/aact_schema.py reads the
-- CREATE TABLE statements of this file and 001, so they are the one list of AACT's columns.
-- Existing tables gain missing columns through the DO block below (it only ALTERs what is absent, so a
-- current database takes no table locks here).

CREATE TABLE IF NOT EXISTS ctgov.baseline_counts (
    id serial PRIMARY KEY, nct_id varchar, result_group_id integer, ctgov_group_code varchar, units varchar,
    scope varchar, count integer);
CREATE TABLE IF NOT EXISTS ctgov.baseline_measurements (
    id serial PRIMARY KEY, nct_id varchar, result_group_id integer, ctgov_group_code varchar,
    classification varchar, category varchar, title varchar, description text, units varchar, param_type varchar,
    param_value varchar, param_value_num numeric, dispersion_type varchar, dispersion_value varchar,
    dispersion_value_num numeric, dispersion_lower_limit numeric, dispersion_upper_limit numeric,
    explanation_of_na varchar, number_analyzed integer, number_analyzed_units varchar,
    population_description varchar, calculate_percentage varchar);
CREATE TABLE IF NOT EXISTS ctgov.central_contacts (
    id serial PRIMARY KEY, nct_id varchar, contact_type varchar, name varchar, phone varchar, email varchar,
    phone_extension varchar, role varchar);
CREATE TABLE IF NOT EXISTS ctgov.documents (
    id serial PRIMARY KEY, nct_id varchar, document_id varchar, document_type varchar, url varchar, comment text);
CREATE TABLE IF NOT EXISTS ctgov.drop_withdrawals (
    id serial PRIMARY KEY, nct_id varchar, result_group_id integer, ctgov_group_code varchar, period varchar,
    reason varchar, count integer, drop_withdraw_comment varchar, reason_comment varchar, count_units integer);
CREATE TABLE IF NOT EXISTS ctgov.facility_contacts (
    id serial PRIMARY KEY, nct_id varchar, facility_id integer, contact_type varchar, name varchar, email varchar,
    phone varchar, phone_extension varchar);
CREATE TABLE IF NOT EXISTS ctgov.facility_investigators (
    id serial PRIMARY KEY, nct_id varchar, facility_id integer, role varchar, name varchar);
CREATE TABLE IF NOT EXISTS ctgov.ipd_information_types (
    id serial PRIMARY KEY, nct_id varchar, name varchar);
CREATE TABLE IF NOT EXISTS ctgov.links (
    id serial PRIMARY KEY, nct_id varchar, url varchar, description text);
CREATE TABLE IF NOT EXISTS ctgov.milestones (
    id serial PRIMARY KEY, nct_id varchar, result_group_id integer, ctgov_group_code varchar, title varchar,
    period varchar, description text, count integer, milestone_description varchar, count_units varchar);
CREATE TABLE IF NOT EXISTS ctgov.outcome_analyses (
    id serial PRIMARY KEY, nct_id varchar, outcome_id integer, non_inferiority_type varchar,
    non_inferiority_description text, param_type varchar, param_value numeric, dispersion_type varchar,
    dispersion_value numeric, p_value_modifier varchar, p_value double precision, ci_n_sides varchar,
    ci_percent numeric, ci_lower_limit numeric, ci_upper_limit numeric, ci_upper_limit_na_comment varchar,
    p_value_description varchar, method varchar, method_description text, estimate_description text,
    groups_description text, other_analysis_description text, ci_upper_limit_raw varchar,
    ci_lower_limit_raw varchar, p_value_raw varchar);
CREATE TABLE IF NOT EXISTS ctgov.outcome_analysis_groups (
    id serial PRIMARY KEY, nct_id varchar, outcome_analysis_id integer, result_group_id integer,
    ctgov_group_code varchar);
CREATE TABLE IF NOT EXISTS ctgov.outcome_counts (
    id serial PRIMARY KEY, nct_id varchar, outcome_id integer, result_group_id integer, ctgov_group_code varchar,
    scope varchar, units varchar, count integer);
CREATE TABLE IF NOT EXISTS ctgov.outcome_measurements (
    id serial PRIMARY KEY, nct_id varchar, outcome_id integer, result_group_id integer, ctgov_group_code varchar,
    classification varchar, category varchar, title varchar, description text, units varchar, param_type varchar,
    param_value varchar, param_value_num numeric, dispersion_type varchar, dispersion_value varchar,
    dispersion_value_num numeric, dispersion_lower_limit numeric, dispersion_upper_limit numeric,
    explanation_of_na text, dispersion_upper_limit_raw varchar, dispersion_lower_limit_raw varchar);
CREATE TABLE IF NOT EXISTS ctgov.overall_officials (
    id serial PRIMARY KEY, nct_id varchar, role varchar, name varchar, affiliation varchar);
CREATE TABLE IF NOT EXISTS ctgov.participant_flows (
    id serial PRIMARY KEY, nct_id varchar, recruitment_details text, pre_assignment_details text,
    units_analyzed varchar);
CREATE TABLE IF NOT EXISTS ctgov.pending_results (
    id serial PRIMARY KEY, nct_id varchar, event varchar, event_date_description varchar, event_date date);
CREATE TABLE IF NOT EXISTS ctgov.provided_documents (
    id serial PRIMARY KEY, nct_id varchar, document_type varchar, has_protocol boolean, has_icf boolean,
    has_sap boolean, document_date date, url varchar);
CREATE TABLE IF NOT EXISTS ctgov.reported_event_totals (
    id serial PRIMARY KEY, nct_id varchar, ctgov_group_code varchar, event_type varchar, classification varchar,
    subjects_affected integer, subjects_at_risk integer, created_at timestamp NOT NULL DEFAULT now(),
    updated_at timestamp NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS ctgov.responsible_parties (
    id serial PRIMARY KEY, nct_id varchar, responsible_party_type varchar, name varchar, title varchar,
    organization varchar, affiliation text, old_name_title varchar);
CREATE TABLE IF NOT EXISTS ctgov.result_agreements (
    id serial PRIMARY KEY, nct_id varchar, pi_employee boolean, agreement text, restriction_type varchar,
    other_details text, restrictive_agreement boolean);
CREATE TABLE IF NOT EXISTS ctgov.result_contacts (
    id serial PRIMARY KEY, nct_id varchar, organization varchar, name varchar, phone varchar, email varchar,
    extension varchar);
CREATE TABLE IF NOT EXISTS ctgov.retractions (
    id bigserial PRIMARY KEY, reference_id integer, pmid varchar, source varchar, nct_id varchar);
CREATE TABLE IF NOT EXISTS ctgov.search_results (
    id serial PRIMARY KEY, nct_id varchar, name varchar, created_at timestamp NOT NULL DEFAULT now(),
    updated_at timestamp NOT NULL DEFAULT now(), "grouping" varchar, study_search_id integer);
CREATE TABLE IF NOT EXISTS ctgov.study_references (
    id serial PRIMARY KEY, nct_id varchar, pmid varchar, reference_type varchar, citation text);

DO $$
DECLARE
    col record;
BEGIN
    FOR col IN
        SELECT want.t, want.c, want.ty FROM (VALUES
            ('baseline_counts', 'nct_id', 'varchar'),
            ('baseline_counts', 'result_group_id', 'integer'),
            ('baseline_counts', 'ctgov_group_code', 'varchar'),
            ('baseline_counts', 'units', 'varchar'),
            ('baseline_counts', 'scope', 'varchar'),
            ('baseline_counts', 'count', 'integer'),
            ('baseline_measurements', 'nct_id', 'varchar'),
            ('baseline_measurements', 'result_group_id', 'integer'),
            ('baseline_measurements', 'ctgov_group_code', 'varchar'),
            ('baseline_measurements', 'classification', 'varchar'),
            ('baseline_measurements', 'category', 'varchar'),
            ('baseline_measurements', 'title', 'varchar'),
            ('baseline_measurements', 'description', 'text'),
            ('baseline_measurements', 'units', 'varchar'),
            ('baseline_measurements', 'param_type', 'varchar'),
            ('baseline_measurements', 'param_value', 'varchar'),
            ('baseline_measurements', 'param_value_num', 'numeric'),
            ('baseline_measurements', 'dispersion_type', 'varchar'),
            ('baseline_measurements', 'dispersion_value', 'varchar'),
            ('baseline_measurements', 'dispersion_value_num', 'numeric'),
            ('baseline_measurements', 'dispersion_lower_limit', 'numeric'),
            ('baseline_measurements', 'dispersion_upper_limit', 'numeric'),
            ('baseline_measurements', 'explanation_of_na', 'varchar'),
            ('baseline_measurements', 'number_analyzed', 'integer'),
            ('baseline_measurements', 'number_analyzed_units', 'varchar'),
            ('baseline_measurements', 'population_description', 'varchar'),
            ('baseline_measurements', 'calculate_percentage', 'varchar'),
            ('brief_summaries', 'nct_id', 'varchar'),
            ('brief_summaries', 'description', 'text'),
            ('browse_conditions', 'nct_id', 'varchar'),
            ('browse_conditions', 'mesh_term', 'varchar'),
            ('browse_conditions', 'downcase_mesh_term', 'varchar'),
            ('browse_conditions', 'mesh_type', 'varchar'),
            ('browse_interventions', 'nct_id', 'varchar'),
            ('browse_interventions', 'mesh_term', 'varchar'),
            ('browse_interventions', 'downcase_mesh_term', 'varchar'),
            ('browse_interventions', 'mesh_type', 'varchar'),
            ('calculated_values', 'nct_id', 'varchar'),
            ('calculated_values', 'number_of_facilities', 'integer'),
            ('calculated_values', 'number_of_nsae_subjects', 'integer'),
            ('calculated_values', 'number_of_sae_subjects', 'integer'),
            ('calculated_values', 'registered_in_calendar_year', 'integer'),
            ('calculated_values', 'nlm_download_date', 'date'),
            ('calculated_values', 'actual_duration', 'integer'),
            ('calculated_values', 'were_results_reported', 'boolean'),
            ('calculated_values', 'months_to_report_results', 'integer'),
            ('calculated_values', 'has_us_facility', 'boolean'),
            ('calculated_values', 'has_single_facility', 'boolean'),
            ('calculated_values', 'minimum_age_num', 'integer'),
            ('calculated_values', 'maximum_age_num', 'integer'),
            ('calculated_values', 'minimum_age_unit', 'varchar'),
            ('calculated_values', 'maximum_age_unit', 'varchar'),
            ('calculated_values', 'number_of_primary_outcomes_to_measure', 'integer'),
            ('calculated_values', 'number_of_secondary_outcomes_to_measure', 'integer'),
            ('calculated_values', 'number_of_other_outcomes_to_measure', 'integer'),
            ('central_contacts', 'nct_id', 'varchar'),
            ('central_contacts', 'contact_type', 'varchar'),
            ('central_contacts', 'name', 'varchar'),
            ('central_contacts', 'phone', 'varchar'),
            ('central_contacts', 'email', 'varchar'),
            ('central_contacts', 'phone_extension', 'varchar'),
            ('central_contacts', 'role', 'varchar'),
            ('conditions', 'nct_id', 'varchar'),
            ('conditions', 'name', 'varchar'),
            ('conditions', 'downcase_name', 'varchar'),
            ('countries', 'nct_id', 'varchar'),
            ('countries', 'name', 'varchar'),
            ('countries', 'removed', 'boolean'),
            ('design_group_interventions', 'nct_id', 'varchar'),
            ('design_group_interventions', 'design_group_id', 'integer'),
            ('design_group_interventions', 'intervention_id', 'integer'),
            ('design_groups', 'nct_id', 'varchar'),
            ('design_groups', 'group_type', 'varchar'),
            ('design_groups', 'title', 'varchar'),
            ('design_groups', 'description', 'text'),
            ('design_outcomes', 'nct_id', 'varchar'),
            ('design_outcomes', 'outcome_type', 'varchar'),
            ('design_outcomes', 'measure', 'text'),
            ('design_outcomes', 'time_frame', 'text'),
            ('design_outcomes', 'population', 'varchar'),
            ('design_outcomes', 'description', 'text'),
            ('designs', 'nct_id', 'varchar'),
            ('designs', 'allocation', 'varchar'),
            ('designs', 'intervention_model', 'varchar'),
            ('designs', 'observational_model', 'varchar'),
            ('designs', 'primary_purpose', 'varchar'),
            ('designs', 'time_perspective', 'varchar'),
            ('designs', 'masking', 'varchar'),
            ('designs', 'masking_description', 'text'),
            ('designs', 'intervention_model_description', 'text'),
            ('designs', 'subject_masked', 'boolean'),
            ('designs', 'caregiver_masked', 'boolean'),
            ('designs', 'investigator_masked', 'boolean'),
            ('designs', 'outcomes_assessor_masked', 'boolean'),
            ('detailed_descriptions', 'nct_id', 'varchar'),
            ('detailed_descriptions', 'description', 'text'),
            ('documents', 'nct_id', 'varchar'),
            ('documents', 'document_id', 'varchar'),
            ('documents', 'document_type', 'varchar'),
            ('documents', 'url', 'varchar'),
            ('documents', 'comment', 'text'),
            ('drop_withdrawals', 'nct_id', 'varchar'),
            ('drop_withdrawals', 'result_group_id', 'integer'),
            ('drop_withdrawals', 'ctgov_group_code', 'varchar'),
            ('drop_withdrawals', 'period', 'varchar'),
            ('drop_withdrawals', 'reason', 'varchar'),
            ('drop_withdrawals', 'count', 'integer'),
            ('drop_withdrawals', 'drop_withdraw_comment', 'varchar'),
            ('drop_withdrawals', 'reason_comment', 'varchar'),
            ('drop_withdrawals', 'count_units', 'integer'),
            ('eligibilities', 'nct_id', 'varchar'),
            ('eligibilities', 'sampling_method', 'varchar'),
            ('eligibilities', 'gender', 'varchar'),
            ('eligibilities', 'minimum_age', 'varchar'),
            ('eligibilities', 'maximum_age', 'varchar'),
            ('eligibilities', 'healthy_volunteers', 'boolean'),
            ('eligibilities', 'population', 'text'),
            ('eligibilities', 'criteria', 'text'),
            ('eligibilities', 'gender_description', 'text'),
            ('eligibilities', 'gender_based', 'boolean'),
            ('eligibilities', 'adult', 'boolean'),
            ('eligibilities', 'child', 'boolean'),
            ('eligibilities', 'older_adult', 'boolean'),
            ('facilities', 'nct_id', 'varchar'),
            ('facilities', 'status', 'varchar'),
            ('facilities', 'name', 'varchar'),
            ('facilities', 'city', 'varchar'),
            ('facilities', 'state', 'varchar'),
            ('facilities', 'zip', 'varchar'),
            ('facilities', 'country', 'varchar'),
            ('facilities', 'latitude', 'numeric(10,6)'),
            ('facilities', 'longitude', 'numeric(10,6)'),
            ('facility_contacts', 'nct_id', 'varchar'),
            ('facility_contacts', 'facility_id', 'integer'),
            ('facility_contacts', 'contact_type', 'varchar'),
            ('facility_contacts', 'name', 'varchar'),
            ('facility_contacts', 'email', 'varchar'),
            ('facility_contacts', 'phone', 'varchar'),
            ('facility_contacts', 'phone_extension', 'varchar'),
            ('facility_investigators', 'nct_id', 'varchar'),
            ('facility_investigators', 'facility_id', 'integer'),
            ('facility_investigators', 'role', 'varchar'),
            ('facility_investigators', 'name', 'varchar'),
            ('id_information', 'nct_id', 'varchar'),
            ('id_information', 'id_source', 'varchar'),
            ('id_information', 'id_value', 'varchar'),
            ('id_information', 'id_type', 'varchar'),
            ('id_information', 'id_type_description', 'varchar'),
            ('id_information', 'id_link', 'varchar'),
            ('intervention_other_names', 'nct_id', 'varchar'),
            ('intervention_other_names', 'intervention_id', 'integer'),
            ('intervention_other_names', 'name', 'varchar'),
            ('interventions', 'nct_id', 'varchar'),
            ('interventions', 'intervention_type', 'varchar'),
            ('interventions', 'name', 'varchar'),
            ('interventions', 'description', 'text'),
            ('ipd_information_types', 'nct_id', 'varchar'),
            ('ipd_information_types', 'name', 'varchar'),
            ('keywords', 'nct_id', 'varchar'),
            ('keywords', 'name', 'varchar'),
            ('keywords', 'downcase_name', 'varchar'),
            ('links', 'nct_id', 'varchar'),
            ('links', 'url', 'varchar'),
            ('links', 'description', 'text'),
            ('milestones', 'nct_id', 'varchar'),
            ('milestones', 'result_group_id', 'integer'),
            ('milestones', 'ctgov_group_code', 'varchar'),
            ('milestones', 'title', 'varchar'),
            ('milestones', 'period', 'varchar'),
            ('milestones', 'description', 'text'),
            ('milestones', 'count', 'integer'),
            ('milestones', 'milestone_description', 'varchar'),
            ('milestones', 'count_units', 'varchar'),
            ('outcome_analyses', 'nct_id', 'varchar'),
            ('outcome_analyses', 'outcome_id', 'integer'),
            ('outcome_analyses', 'non_inferiority_type', 'varchar'),
            ('outcome_analyses', 'non_inferiority_description', 'text'),
            ('outcome_analyses', 'param_type', 'varchar'),
            ('outcome_analyses', 'param_value', 'numeric'),
            ('outcome_analyses', 'dispersion_type', 'varchar'),
            ('outcome_analyses', 'dispersion_value', 'numeric'),
            ('outcome_analyses', 'p_value_modifier', 'varchar'),
            ('outcome_analyses', 'p_value', 'double precision'),
            ('outcome_analyses', 'ci_n_sides', 'varchar'),
            ('outcome_analyses', 'ci_percent', 'numeric'),
            ('outcome_analyses', 'ci_lower_limit', 'numeric'),
            ('outcome_analyses', 'ci_upper_limit', 'numeric'),
            ('outcome_analyses', 'ci_upper_limit_na_comment', 'varchar'),
            ('outcome_analyses', 'p_value_description', 'varchar'),
            ('outcome_analyses', 'method', 'varchar'),
            ('outcome_analyses', 'method_description', 'text'),
            ('outcome_analyses', 'estimate_description', 'text'),
            ('outcome_analyses', 'groups_description', 'text'),
            ('outcome_analyses', 'other_analysis_description', 'text'),
            ('outcome_analyses', 'ci_upper_limit_raw', 'varchar'),
            ('outcome_analyses', 'ci_lower_limit_raw', 'varchar'),
            ('outcome_analyses', 'p_value_raw', 'varchar'),
            ('outcome_analysis_groups', 'nct_id', 'varchar'),
            ('outcome_analysis_groups', 'outcome_analysis_id', 'integer'),
            ('outcome_analysis_groups', 'result_group_id', 'integer'),
            ('outcome_analysis_groups', 'ctgov_group_code', 'varchar'),
            ('outcome_counts', 'nct_id', 'varchar'),
            ('outcome_counts', 'outcome_id', 'integer'),
            ('outcome_counts', 'result_group_id', 'integer'),
            ('outcome_counts', 'ctgov_group_code', 'varchar'),
            ('outcome_counts', 'scope', 'varchar'),
            ('outcome_counts', 'units', 'varchar'),
            ('outcome_counts', 'count', 'integer'),
            ('outcome_measurements', 'nct_id', 'varchar'),
            ('outcome_measurements', 'outcome_id', 'integer'),
            ('outcome_measurements', 'result_group_id', 'integer'),
            ('outcome_measurements', 'ctgov_group_code', 'varchar'),
            ('outcome_measurements', 'classification', 'varchar'),
            ('outcome_measurements', 'category', 'varchar'),
            ('outcome_measurements', 'title', 'varchar'),
            ('outcome_measurements', 'description', 'text'),
            ('outcome_measurements', 'units', 'varchar'),
            ('outcome_measurements', 'param_type', 'varchar'),
            ('outcome_measurements', 'param_value', 'varchar'),
            ('outcome_measurements', 'param_value_num', 'numeric'),
            ('outcome_measurements', 'dispersion_type', 'varchar'),
            ('outcome_measurements', 'dispersion_value', 'varchar'),
            ('outcome_measurements', 'dispersion_value_num', 'numeric'),
            ('outcome_measurements', 'dispersion_lower_limit', 'numeric'),
            ('outcome_measurements', 'dispersion_upper_limit', 'numeric'),
            ('outcome_measurements', 'explanation_of_na', 'text'),
            ('outcome_measurements', 'dispersion_upper_limit_raw', 'varchar'),
            ('outcome_measurements', 'dispersion_lower_limit_raw', 'varchar'),
            ('outcomes', 'nct_id', 'varchar'),
            ('outcomes', 'outcome_type', 'varchar'),
            ('outcomes', 'title', 'text'),
            ('outcomes', 'description', 'text'),
            ('outcomes', 'time_frame', 'text'),
            ('outcomes', 'population', 'text'),
            ('outcomes', 'anticipated_posting_date', 'date'),
            ('outcomes', 'anticipated_posting_month_year', 'varchar'),
            ('outcomes', 'units', 'varchar'),
            ('outcomes', 'units_analyzed', 'varchar'),
            ('outcomes', 'dispersion_type', 'varchar'),
            ('outcomes', 'param_type', 'varchar'),
            ('overall_officials', 'nct_id', 'varchar'),
            ('overall_officials', 'role', 'varchar'),
            ('overall_officials', 'name', 'varchar'),
            ('overall_officials', 'affiliation', 'varchar'),
            ('participant_flows', 'nct_id', 'varchar'),
            ('participant_flows', 'recruitment_details', 'text'),
            ('participant_flows', 'pre_assignment_details', 'text'),
            ('participant_flows', 'units_analyzed', 'varchar'),
            ('pending_results', 'nct_id', 'varchar'),
            ('pending_results', 'event', 'varchar'),
            ('pending_results', 'event_date_description', 'varchar'),
            ('pending_results', 'event_date', 'date'),
            ('provided_documents', 'nct_id', 'varchar'),
            ('provided_documents', 'document_type', 'varchar'),
            ('provided_documents', 'has_protocol', 'boolean'),
            ('provided_documents', 'has_icf', 'boolean'),
            ('provided_documents', 'has_sap', 'boolean'),
            ('provided_documents', 'document_date', 'date'),
            ('provided_documents', 'url', 'varchar'),
            ('reported_event_totals', 'nct_id', 'varchar'),
            ('reported_event_totals', 'ctgov_group_code', 'varchar'),
            ('reported_event_totals', 'event_type', 'varchar'),
            ('reported_event_totals', 'classification', 'varchar'),
            ('reported_event_totals', 'subjects_affected', 'integer'),
            ('reported_event_totals', 'subjects_at_risk', 'integer'),
            ('reported_event_totals', 'created_at', 'timestamp NOT NULL DEFAULT now()'),
            ('reported_event_totals', 'updated_at', 'timestamp NOT NULL DEFAULT now()'),
            ('reported_events', 'nct_id', 'varchar'),
            ('reported_events', 'result_group_id', 'integer'),
            ('reported_events', 'ctgov_group_code', 'varchar'),
            ('reported_events', 'time_frame', 'text'),
            ('reported_events', 'event_type', 'varchar'),
            ('reported_events', 'default_vocab', 'varchar'),
            ('reported_events', 'default_assessment', 'varchar'),
            ('reported_events', 'subjects_affected', 'integer'),
            ('reported_events', 'subjects_at_risk', 'integer'),
            ('reported_events', 'description', 'text'),
            ('reported_events', 'event_count', 'integer'),
            ('reported_events', 'organ_system', 'varchar'),
            ('reported_events', 'adverse_event_term', 'varchar'),
            ('reported_events', 'frequency_threshold', 'integer'),
            ('reported_events', 'vocab', 'varchar'),
            ('reported_events', 'assessment', 'varchar'),
            ('responsible_parties', 'nct_id', 'varchar'),
            ('responsible_parties', 'responsible_party_type', 'varchar'),
            ('responsible_parties', 'name', 'varchar'),
            ('responsible_parties', 'title', 'varchar'),
            ('responsible_parties', 'organization', 'varchar'),
            ('responsible_parties', 'affiliation', 'text'),
            ('responsible_parties', 'old_name_title', 'varchar'),
            ('result_agreements', 'nct_id', 'varchar'),
            ('result_agreements', 'pi_employee', 'boolean'),
            ('result_agreements', 'agreement', 'text'),
            ('result_agreements', 'restriction_type', 'varchar'),
            ('result_agreements', 'other_details', 'text'),
            ('result_agreements', 'restrictive_agreement', 'boolean'),
            ('result_contacts', 'nct_id', 'varchar'),
            ('result_contacts', 'organization', 'varchar'),
            ('result_contacts', 'name', 'varchar'),
            ('result_contacts', 'phone', 'varchar'),
            ('result_contacts', 'email', 'varchar'),
            ('result_contacts', 'extension', 'varchar'),
            ('result_groups', 'nct_id', 'varchar'),
            ('result_groups', 'ctgov_group_code', 'varchar'),
            ('result_groups', 'result_type', 'varchar'),
            ('result_groups', 'title', 'varchar'),
            ('result_groups', 'description', 'text'),
            ('result_groups', 'outcome_id', 'integer'),
            ('retractions', 'reference_id', 'integer'),
            ('retractions', 'pmid', 'varchar'),
            ('retractions', 'source', 'varchar'),
            ('retractions', 'nct_id', 'varchar'),
            ('search_results', 'nct_id', 'varchar'),
            ('search_results', 'name', 'varchar'),
            ('search_results', 'created_at', 'timestamp NOT NULL DEFAULT now()'),
            ('search_results', 'updated_at', 'timestamp NOT NULL DEFAULT now()'),
            ('search_results', 'grouping', 'varchar'),
            ('search_results', 'study_search_id', 'integer'),
            ('sponsors', 'nct_id', 'varchar'),
            ('sponsors', 'agency_class', 'varchar'),
            ('sponsors', 'lead_or_collaborator', 'varchar'),
            ('sponsors', 'name', 'varchar'),
            ('studies', 'nct_id', 'varchar'),
            ('studies', 'nlm_download_date_description', 'varchar'),
            ('studies', 'study_first_submitted_date', 'date'),
            ('studies', 'results_first_submitted_date', 'date'),
            ('studies', 'disposition_first_submitted_date', 'date'),
            ('studies', 'last_update_submitted_date', 'date'),
            ('studies', 'study_first_submitted_qc_date', 'date'),
            ('studies', 'study_first_posted_date', 'date'),
            ('studies', 'study_first_posted_date_type', 'varchar'),
            ('studies', 'results_first_submitted_qc_date', 'date'),
            ('studies', 'results_first_posted_date', 'date'),
            ('studies', 'results_first_posted_date_type', 'varchar'),
            ('studies', 'disposition_first_submitted_qc_date', 'date'),
            ('studies', 'disposition_first_posted_date', 'date'),
            ('studies', 'disposition_first_posted_date_type', 'varchar'),
            ('studies', 'last_update_submitted_qc_date', 'date'),
            ('studies', 'last_update_posted_date', 'date'),
            ('studies', 'last_update_posted_date_type', 'varchar'),
            ('studies', 'start_month_year', 'varchar'),
            ('studies', 'start_date_type', 'varchar'),
            ('studies', 'start_date', 'date'),
            ('studies', 'verification_month_year', 'varchar'),
            ('studies', 'verification_date', 'date'),
            ('studies', 'completion_month_year', 'varchar'),
            ('studies', 'completion_date_type', 'varchar'),
            ('studies', 'completion_date', 'date'),
            ('studies', 'primary_completion_month_year', 'varchar'),
            ('studies', 'primary_completion_date_type', 'varchar'),
            ('studies', 'primary_completion_date', 'date'),
            ('studies', 'target_duration', 'varchar'),
            ('studies', 'study_type', 'varchar'),
            ('studies', 'acronym', 'varchar'),
            ('studies', 'baseline_population', 'text'),
            ('studies', 'brief_title', 'text'),
            ('studies', 'official_title', 'text'),
            ('studies', 'overall_status', 'varchar'),
            ('studies', 'last_known_status', 'varchar'),
            ('studies', 'phase', 'varchar'),
            ('studies', 'enrollment', 'integer'),
            ('studies', 'enrollment_type', 'varchar'),
            ('studies', 'source', 'varchar'),
            ('studies', 'limitations_and_caveats', 'varchar'),
            ('studies', 'number_of_arms', 'integer'),
            ('studies', 'number_of_groups', 'integer'),
            ('studies', 'why_stopped', 'varchar'),
            ('studies', 'has_expanded_access', 'boolean'),
            ('studies', 'expanded_access_type_individual', 'boolean'),
            ('studies', 'expanded_access_type_intermediate', 'boolean'),
            ('studies', 'expanded_access_type_treatment', 'boolean'),
            ('studies', 'has_dmc', 'boolean'),
            ('studies', 'is_fda_regulated_drug', 'boolean'),
            ('studies', 'is_fda_regulated_device', 'boolean'),
            ('studies', 'is_unapproved_device', 'boolean'),
            ('studies', 'is_ppsd', 'boolean'),
            ('studies', 'is_us_export', 'boolean'),
            ('studies', 'biospec_retention', 'varchar'),
            ('studies', 'biospec_description', 'text'),
            ('studies', 'ipd_time_frame', 'varchar'),
            ('studies', 'ipd_access_criteria', 'varchar'),
            ('studies', 'ipd_url', 'varchar'),
            ('studies', 'plan_to_share_ipd', 'varchar'),
            ('studies', 'plan_to_share_ipd_description', 'varchar'),
            ('studies', 'created_at', 'timestamp NOT NULL DEFAULT now()'),
            ('studies', 'updated_at', 'timestamp NOT NULL DEFAULT now()'),
            ('studies', 'source_class', 'varchar'),
            ('studies', 'delayed_posting', 'boolean'),
            ('studies', 'expanded_access_nctid', 'varchar'),
            ('studies', 'expanded_access_status_for_nctid', 'varchar'),
            ('studies', 'fdaaa801_violation', 'boolean'),
            ('studies', 'baseline_type_units_analyzed', 'varchar'),
            ('studies', 'patient_registry', 'boolean'),
            ('study_references', 'nct_id', 'varchar'),
            ('study_references', 'pmid', 'varchar'),
            ('study_references', 'reference_type', 'varchar'),
            ('study_references', 'citation', 'text')
        ) AS want(t, c, ty)
        WHERE NOT EXISTS (SELECT 1 FROM information_schema.columns ic
                          WHERE ic.table_schema = 'ctgov' AND ic.table_name = want.t AND ic.column_name = want.c)
    LOOP
        EXECUTE format('ALTER TABLE ctgov.%I ADD COLUMN IF NOT EXISTS %I ' || col.ty, col.t, col.c);
    END LOOP;
END
$$;

CREATE INDEX IF NOT EXISTS ix_baseline_counts_nct ON ctgov.baseline_counts (nct_id);
CREATE INDEX IF NOT EXISTS ix_baseline_measurements_nct ON ctgov.baseline_measurements (nct_id);
CREATE INDEX IF NOT EXISTS ix_central_contacts_nct ON ctgov.central_contacts (nct_id);
CREATE INDEX IF NOT EXISTS ix_documents_nct ON ctgov.documents (nct_id);
CREATE INDEX IF NOT EXISTS ix_drop_withdrawals_nct ON ctgov.drop_withdrawals (nct_id);
CREATE INDEX IF NOT EXISTS ix_facility_contacts_nct ON ctgov.facility_contacts (nct_id);
CREATE INDEX IF NOT EXISTS ix_facility_investigators_nct ON ctgov.facility_investigators (nct_id);
CREATE INDEX IF NOT EXISTS ix_ipd_information_types_nct ON ctgov.ipd_information_types (nct_id);
CREATE INDEX IF NOT EXISTS ix_links_nct ON ctgov.links (nct_id);
CREATE INDEX IF NOT EXISTS ix_milestones_nct ON ctgov.milestones (nct_id);
CREATE INDEX IF NOT EXISTS ix_outcome_analyses_nct ON ctgov.outcome_analyses (nct_id);
CREATE INDEX IF NOT EXISTS ix_outcome_analysis_groups_nct ON ctgov.outcome_analysis_groups (nct_id);
CREATE INDEX IF NOT EXISTS ix_outcome_counts_nct ON ctgov.outcome_counts (nct_id);
CREATE INDEX IF NOT EXISTS ix_outcome_measurements_nct ON ctgov.outcome_measurements (nct_id);
CREATE INDEX IF NOT EXISTS ix_overall_officials_nct ON ctgov.overall_officials (nct_id);
CREATE INDEX IF NOT EXISTS ix_participant_flows_nct ON ctgov.participant_flows (nct_id);
CREATE INDEX IF NOT EXISTS ix_pending_results_nct ON ctgov.pending_results (nct_id);
CREATE INDEX IF NOT EXISTS ix_provided_documents_nct ON ctgov.provided_documents (nct_id);
CREATE INDEX IF NOT EXISTS ix_reported_event_totals_nct ON ctgov.reported_event_totals (nct_id);
CREATE INDEX IF NOT EXISTS ix_responsible_parties_nct ON ctgov.responsible_parties (nct_id);
CREATE INDEX IF NOT EXISTS ix_result_agreements_nct ON ctgov.result_agreements (nct_id);
CREATE INDEX IF NOT EXISTS ix_result_contacts_nct ON ctgov.result_contacts (nct_id);
CREATE INDEX IF NOT EXISTS ix_retractions_nct ON ctgov.retractions (nct_id);
CREATE INDEX IF NOT EXISTS ix_search_results_nct ON ctgov.search_results (nct_id);
CREATE INDEX IF NOT EXISTS ix_study_references_nct ON ctgov.study_references (nct_id);
CREATE INDEX IF NOT EXISTS ix_result_groups_outcome_id ON ctgov.result_groups (outcome_id);
CREATE INDEX IF NOT EXISTS ix_outcome_measurements_outcome_id ON ctgov.outcome_measurements (outcome_id);
CREATE INDEX IF NOT EXISTS ix_outcome_counts_outcome_id ON ctgov.outcome_counts (outcome_id);
CREATE INDEX IF NOT EXISTS ix_outcome_analyses_outcome_id ON ctgov.outcome_analyses (outcome_id);
CREATE INDEX IF NOT EXISTS ix_outcome_analysis_groups_outcome_analysis_id ON ctgov.outcome_analysis_groups (outcome_analysis_id);
CREATE INDEX IF NOT EXISTS ix_facility_contacts_facility_id ON ctgov.facility_contacts (facility_id);
CREATE INDEX IF NOT EXISTS ix_facility_investigators_facility_id ON ctgov.facility_investigators (facility_id);
CREATE INDEX IF NOT EXISTS ix_reported_event_totals_event_type ON ctgov.reported_event_totals (event_type);
