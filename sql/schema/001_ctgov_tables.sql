-- AACT `ctgov` tables (API v2 layout, as on AACT since 2024-06), real names and types. Idempotent.
CREATE SCHEMA IF NOT EXISTS ctgov;

CREATE TABLE IF NOT EXISTS ctgov.studies (
    nct_id varchar PRIMARY KEY,
    nlm_download_date_description varchar,
    study_first_submitted_date date,
    results_first_submitted_date date,
    disposition_first_submitted_date date,
    last_update_submitted_date date,
    study_first_submitted_qc_date date,
    study_first_posted_date date,
    study_first_posted_date_type varchar,
    results_first_submitted_qc_date date,
    results_first_posted_date date,
    results_first_posted_date_type varchar,
    disposition_first_submitted_qc_date date,
    disposition_first_posted_date date,
    disposition_first_posted_date_type varchar,
    last_update_submitted_qc_date date,
    last_update_posted_date date,
    last_update_posted_date_type varchar,
    start_month_year varchar,
    start_date_type varchar,
    start_date date,
    verification_month_year varchar,
    verification_date date,
    completion_month_year varchar,
    completion_date_type varchar,
    completion_date date,
    primary_completion_month_year varchar,
    primary_completion_date_type varchar,
    primary_completion_date date,
    target_duration varchar,
    study_type varchar,
    acronym varchar,
    baseline_population text,
    brief_title text,
    official_title text,
    overall_status varchar,
    last_known_status varchar,
    phase varchar,
    enrollment integer,
    enrollment_type varchar,
    source varchar,
    limitations_and_caveats varchar,
    number_of_arms integer,
    number_of_groups integer,
    why_stopped varchar,
    has_expanded_access boolean,
    expanded_access_type_individual boolean,
    expanded_access_type_intermediate boolean,
    expanded_access_type_treatment boolean,
    has_dmc boolean,
    is_fda_regulated_drug boolean,
    is_fda_regulated_device boolean,
    is_unapproved_device boolean,
    is_ppsd boolean,
    is_us_export boolean,
    biospec_retention varchar,
    biospec_description text,
    ipd_time_frame varchar,
    ipd_access_criteria varchar,
    ipd_url varchar,
    plan_to_share_ipd varchar,
    plan_to_share_ipd_description varchar,
    created_at timestamp NOT NULL DEFAULT now(),
    updated_at timestamp NOT NULL DEFAULT now(),
    source_class varchar,
    delayed_posting boolean,
    expanded_access_nctid varchar,
    expanded_access_status_for_nctid varchar,
    fdaaa801_violation boolean,
    baseline_type_units_analyzed varchar,
    patient_registry boolean
);

CREATE TABLE IF NOT EXISTS ctgov.conditions (
    id serial PRIMARY KEY, nct_id varchar, name varchar, downcase_name varchar);
CREATE TABLE IF NOT EXISTS ctgov.keywords (
    id serial PRIMARY KEY, nct_id varchar, name varchar, downcase_name varchar);
CREATE TABLE IF NOT EXISTS ctgov.browse_conditions (
    id serial PRIMARY KEY, nct_id varchar, mesh_term varchar, downcase_mesh_term varchar, mesh_type varchar);
CREATE TABLE IF NOT EXISTS ctgov.browse_interventions (
    id serial PRIMARY KEY, nct_id varchar, mesh_term varchar, downcase_mesh_term varchar, mesh_type varchar);
CREATE TABLE IF NOT EXISTS ctgov.interventions (
    id serial PRIMARY KEY, nct_id varchar, intervention_type varchar, name varchar, description text);
CREATE TABLE IF NOT EXISTS ctgov.intervention_other_names (
    id serial PRIMARY KEY, nct_id varchar, intervention_id integer, name varchar);
CREATE TABLE IF NOT EXISTS ctgov.design_groups (
    id serial PRIMARY KEY, nct_id varchar, group_type varchar, title varchar, description text);
CREATE TABLE IF NOT EXISTS ctgov.design_group_interventions (
    id serial PRIMARY KEY, nct_id varchar, design_group_id integer, intervention_id integer);
CREATE TABLE IF NOT EXISTS ctgov.designs (
    id serial PRIMARY KEY, nct_id varchar, allocation varchar, intervention_model varchar,
    observational_model varchar, primary_purpose varchar, time_perspective varchar, masking varchar,
    masking_description text, intervention_model_description text, subject_masked boolean,
    caregiver_masked boolean, investigator_masked boolean, outcomes_assessor_masked boolean);
CREATE TABLE IF NOT EXISTS ctgov.eligibilities (
    id serial PRIMARY KEY, nct_id varchar, sampling_method varchar, gender varchar,
    minimum_age varchar, maximum_age varchar, healthy_volunteers boolean, population text,
    criteria text, gender_description text, gender_based boolean, adult boolean, child boolean,
    older_adult boolean);
CREATE TABLE IF NOT EXISTS ctgov.facilities (
    id serial PRIMARY KEY, nct_id varchar, status varchar, name varchar, city varchar, state varchar,
    zip varchar, country varchar, latitude numeric(10, 6), longitude numeric(10, 6));
CREATE TABLE IF NOT EXISTS ctgov.countries (
    id serial PRIMARY KEY, nct_id varchar, name varchar, removed boolean);
CREATE TABLE IF NOT EXISTS ctgov.sponsors (
    id serial PRIMARY KEY, nct_id varchar, agency_class varchar, lead_or_collaborator varchar, name varchar);
CREATE TABLE IF NOT EXISTS ctgov.calculated_values (
    id serial PRIMARY KEY, nct_id varchar, number_of_facilities integer, number_of_nsae_subjects integer,
    number_of_sae_subjects integer, registered_in_calendar_year integer, nlm_download_date date,
    actual_duration integer, were_results_reported boolean DEFAULT false, months_to_report_results integer,
    has_us_facility boolean, has_single_facility boolean DEFAULT false, minimum_age_num integer,
    maximum_age_num integer, minimum_age_unit varchar, maximum_age_unit varchar,
    number_of_primary_outcomes_to_measure integer, number_of_secondary_outcomes_to_measure integer,
    number_of_other_outcomes_to_measure integer);
CREATE TABLE IF NOT EXISTS ctgov.brief_summaries (
    id serial PRIMARY KEY, nct_id varchar, description text);
CREATE TABLE IF NOT EXISTS ctgov.detailed_descriptions (
    id serial PRIMARY KEY, nct_id varchar, description text);
CREATE TABLE IF NOT EXISTS ctgov.design_outcomes (
    id serial PRIMARY KEY, nct_id varchar, outcome_type varchar, measure text, time_frame text,
    population varchar, description text);
CREATE TABLE IF NOT EXISTS ctgov.outcomes (
    id serial PRIMARY KEY, nct_id varchar, outcome_type varchar, title text, description text,
    time_frame text, population text, anticipated_posting_date date, anticipated_posting_month_year varchar,
    units varchar, units_analyzed varchar, dispersion_type varchar, param_type varchar);
CREATE TABLE IF NOT EXISTS ctgov.result_groups (
    id serial PRIMARY KEY, nct_id varchar, ctgov_group_code varchar, result_type varchar,
    title varchar, description text, outcome_id integer);
CREATE TABLE IF NOT EXISTS ctgov.reported_events (
    id serial PRIMARY KEY, nct_id varchar, result_group_id integer, ctgov_group_code varchar,
    time_frame text, event_type varchar, default_vocab varchar, default_assessment varchar,
    subjects_affected integer, subjects_at_risk integer, description text, event_count integer,
    organ_system varchar, adverse_event_term varchar, frequency_threshold integer, vocab varchar,
    assessment varchar);
CREATE TABLE IF NOT EXISTS ctgov.id_information (
    id serial PRIMARY KEY, nct_id varchar, id_source varchar, id_value varchar, id_type varchar,
    id_type_description varchar, id_link varchar);
