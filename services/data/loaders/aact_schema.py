"""AACT's 47 study tables (schema `ctgov`, API v2 layout): names, columns in AACT's order and their types.

Transcribed from AACT's db/ctgov_v2.sql and its 2024 migrations (github.com/ctti-clinicaltrials/aact, MIT):
the single source for the loaders' column lists, value coercion, `db info` and the flat-file import.
sql/schema/003_ctgov_aact_tables.sql creates the same tables; tests/test_aact_schema.py checks they agree.
"""

from __future__ import annotations

TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "baseline_counts": (
        ("id", "integer"), ("nct_id", "varchar"), ("result_group_id", "integer"), ("ctgov_group_code", "varchar"),
        ("units", "varchar"), ("scope", "varchar"), ("count", "integer"),
    ),
    "baseline_measurements": (
        ("id", "integer"), ("nct_id", "varchar"), ("result_group_id", "integer"), ("ctgov_group_code", "varchar"),
        ("classification", "varchar"), ("category", "varchar"), ("title", "varchar"), ("description", "text"),
        ("units", "varchar"), ("param_type", "varchar"), ("param_value", "varchar"), ("param_value_num", "numeric"),
        ("dispersion_type", "varchar"), ("dispersion_value", "varchar"), ("dispersion_value_num", "numeric"),
        ("dispersion_lower_limit", "numeric"), ("dispersion_upper_limit", "numeric"),
        ("explanation_of_na", "varchar"), ("number_analyzed", "integer"), ("number_analyzed_units", "varchar"),
        ("population_description", "varchar"), ("calculate_percentage", "varchar"),
    ),
    "brief_summaries": (
        ("id", "integer"), ("nct_id", "varchar"), ("description", "text"),
    ),
    "browse_conditions": (
        ("id", "integer"), ("nct_id", "varchar"), ("mesh_term", "varchar"), ("downcase_mesh_term", "varchar"),
        ("mesh_type", "varchar"),
    ),
    "browse_interventions": (
        ("id", "integer"), ("nct_id", "varchar"), ("mesh_term", "varchar"), ("downcase_mesh_term", "varchar"),
        ("mesh_type", "varchar"),
    ),
    "calculated_values": (
        ("id", "integer"), ("nct_id", "varchar"), ("number_of_facilities", "integer"),
        ("number_of_nsae_subjects", "integer"), ("number_of_sae_subjects", "integer"),
        ("registered_in_calendar_year", "integer"), ("nlm_download_date", "date"), ("actual_duration", "integer"),
        ("were_results_reported", "boolean"), ("months_to_report_results", "integer"), ("has_us_facility", "boolean"),
        ("has_single_facility", "boolean"), ("minimum_age_num", "integer"), ("maximum_age_num", "integer"),
        ("minimum_age_unit", "varchar"), ("maximum_age_unit", "varchar"),
        ("number_of_primary_outcomes_to_measure", "integer"), ("number_of_secondary_outcomes_to_measure", "integer"),
        ("number_of_other_outcomes_to_measure", "integer"),
    ),
    "central_contacts": (
        ("id", "integer"), ("nct_id", "varchar"), ("contact_type", "varchar"), ("name", "varchar"),
        ("phone", "varchar"), ("email", "varchar"), ("phone_extension", "varchar"), ("role", "varchar"),
    ),
    "conditions": (
        ("id", "integer"), ("nct_id", "varchar"), ("name", "varchar"), ("downcase_name", "varchar"),
    ),
    "countries": (
        ("id", "integer"), ("nct_id", "varchar"), ("name", "varchar"), ("removed", "boolean"),
    ),
    "design_group_interventions": (
        ("id", "integer"), ("nct_id", "varchar"), ("design_group_id", "integer"), ("intervention_id", "integer"),
    ),
    "design_groups": (
        ("id", "integer"), ("nct_id", "varchar"), ("group_type", "varchar"), ("title", "varchar"),
        ("description", "text"),
    ),
    "design_outcomes": (
        ("id", "integer"), ("nct_id", "varchar"), ("outcome_type", "varchar"), ("measure", "text"),
        ("time_frame", "text"), ("population", "varchar"), ("description", "text"),
    ),
    "designs": (
        ("id", "integer"), ("nct_id", "varchar"), ("allocation", "varchar"), ("intervention_model", "varchar"),
        ("observational_model", "varchar"), ("primary_purpose", "varchar"), ("time_perspective", "varchar"),
        ("masking", "varchar"), ("masking_description", "text"), ("intervention_model_description", "text"),
        ("subject_masked", "boolean"), ("caregiver_masked", "boolean"), ("investigator_masked", "boolean"),
        ("outcomes_assessor_masked", "boolean"),
    ),
    "detailed_descriptions": (
        ("id", "integer"), ("nct_id", "varchar"), ("description", "text"),
    ),
    "documents": (
        ("id", "integer"), ("nct_id", "varchar"), ("document_id", "varchar"), ("document_type", "varchar"),
        ("url", "varchar"), ("comment", "text"),
    ),
    "drop_withdrawals": (
        ("id", "integer"), ("nct_id", "varchar"), ("result_group_id", "integer"), ("ctgov_group_code", "varchar"),
        ("period", "varchar"), ("reason", "varchar"), ("count", "integer"), ("drop_withdraw_comment", "varchar"),
        ("reason_comment", "varchar"), ("count_units", "integer"),
    ),
    "eligibilities": (
        ("id", "integer"), ("nct_id", "varchar"), ("sampling_method", "varchar"), ("gender", "varchar"),
        ("minimum_age", "varchar"), ("maximum_age", "varchar"), ("healthy_volunteers", "boolean"),
        ("population", "text"), ("criteria", "text"), ("gender_description", "text"), ("gender_based", "boolean"),
        ("adult", "boolean"), ("child", "boolean"), ("older_adult", "boolean"),
    ),
    "facilities": (
        ("id", "integer"), ("nct_id", "varchar"), ("status", "varchar"), ("name", "varchar"), ("city", "varchar"),
        ("state", "varchar"), ("zip", "varchar"), ("country", "varchar"), ("latitude", "numeric(10,6)"),
        ("longitude", "numeric(10,6)"),
    ),
    "facility_contacts": (
        ("id", "integer"), ("nct_id", "varchar"), ("facility_id", "integer"), ("contact_type", "varchar"),
        ("name", "varchar"), ("email", "varchar"), ("phone", "varchar"), ("phone_extension", "varchar"),
    ),
    "facility_investigators": (
        ("id", "integer"), ("nct_id", "varchar"), ("facility_id", "integer"), ("role", "varchar"),
        ("name", "varchar"),
    ),
    "id_information": (
        ("id", "integer"), ("nct_id", "varchar"), ("id_source", "varchar"), ("id_value", "varchar"),
        ("id_type", "varchar"), ("id_type_description", "varchar"), ("id_link", "varchar"),
    ),
    "intervention_other_names": (
        ("id", "integer"), ("nct_id", "varchar"), ("intervention_id", "integer"), ("name", "varchar"),
    ),
    "interventions": (
        ("id", "integer"), ("nct_id", "varchar"), ("intervention_type", "varchar"), ("name", "varchar"),
        ("description", "text"),
    ),
    "ipd_information_types": (
        ("id", "integer"), ("nct_id", "varchar"), ("name", "varchar"),
    ),
    "keywords": (
        ("id", "integer"), ("nct_id", "varchar"), ("name", "varchar"), ("downcase_name", "varchar"),
    ),
    "links": (
        ("id", "integer"), ("nct_id", "varchar"), ("url", "varchar"), ("description", "text"),
    ),
    "milestones": (
        ("id", "integer"), ("nct_id", "varchar"), ("result_group_id", "integer"), ("ctgov_group_code", "varchar"),
        ("title", "varchar"), ("period", "varchar"), ("description", "text"), ("count", "integer"),
        ("milestone_description", "varchar"), ("count_units", "varchar"),
    ),
    "outcome_analyses": (
        ("id", "integer"), ("nct_id", "varchar"), ("outcome_id", "integer"), ("non_inferiority_type", "varchar"),
        ("non_inferiority_description", "text"), ("param_type", "varchar"), ("param_value", "numeric"),
        ("dispersion_type", "varchar"), ("dispersion_value", "numeric"), ("p_value_modifier", "varchar"),
        ("p_value", "double precision"), ("ci_n_sides", "varchar"), ("ci_percent", "numeric"),
        ("ci_lower_limit", "numeric"), ("ci_upper_limit", "numeric"), ("ci_upper_limit_na_comment", "varchar"),
        ("p_value_description", "varchar"), ("method", "varchar"), ("method_description", "text"),
        ("estimate_description", "text"), ("groups_description", "text"), ("other_analysis_description", "text"),
        ("ci_upper_limit_raw", "varchar"), ("ci_lower_limit_raw", "varchar"), ("p_value_raw", "varchar"),
    ),
    "outcome_analysis_groups": (
        ("id", "integer"), ("nct_id", "varchar"), ("outcome_analysis_id", "integer"), ("result_group_id", "integer"),
        ("ctgov_group_code", "varchar"),
    ),
    "outcome_counts": (
        ("id", "integer"), ("nct_id", "varchar"), ("outcome_id", "integer"), ("result_group_id", "integer"),
        ("ctgov_group_code", "varchar"), ("scope", "varchar"), ("units", "varchar"), ("count", "integer"),
    ),
    "outcome_measurements": (
        ("id", "integer"), ("nct_id", "varchar"), ("outcome_id", "integer"), ("result_group_id", "integer"),
        ("ctgov_group_code", "varchar"), ("classification", "varchar"), ("category", "varchar"), ("title", "varchar"),
        ("description", "text"), ("units", "varchar"), ("param_type", "varchar"), ("param_value", "varchar"),
        ("param_value_num", "numeric"), ("dispersion_type", "varchar"), ("dispersion_value", "varchar"),
        ("dispersion_value_num", "numeric"), ("dispersion_lower_limit", "numeric"),
        ("dispersion_upper_limit", "numeric"), ("explanation_of_na", "text"),
        ("dispersion_upper_limit_raw", "varchar"), ("dispersion_lower_limit_raw", "varchar"),
    ),
    "outcomes": (
        ("id", "integer"), ("nct_id", "varchar"), ("outcome_type", "varchar"), ("title", "text"),
        ("description", "text"), ("time_frame", "text"), ("population", "text"), ("anticipated_posting_date", "date"),
        ("anticipated_posting_month_year", "varchar"), ("units", "varchar"), ("units_analyzed", "varchar"),
        ("dispersion_type", "varchar"), ("param_type", "varchar"),
    ),
    "overall_officials": (
        ("id", "integer"), ("nct_id", "varchar"), ("role", "varchar"), ("name", "varchar"),
        ("affiliation", "varchar"),
    ),
    "participant_flows": (
        ("id", "integer"), ("nct_id", "varchar"), ("recruitment_details", "text"), ("pre_assignment_details", "text"),
        ("units_analyzed", "varchar"),
    ),
    "pending_results": (
        ("id", "integer"), ("nct_id", "varchar"), ("event", "varchar"), ("event_date_description", "varchar"),
        ("event_date", "date"),
    ),
    "provided_documents": (
        ("id", "integer"), ("nct_id", "varchar"), ("document_type", "varchar"), ("has_protocol", "boolean"),
        ("has_icf", "boolean"), ("has_sap", "boolean"), ("document_date", "date"), ("url", "varchar"),
    ),
    "reported_event_totals": (
        ("id", "integer"), ("nct_id", "varchar"), ("ctgov_group_code", "varchar"), ("event_type", "varchar"),
        ("classification", "varchar"), ("subjects_affected", "integer"), ("subjects_at_risk", "integer"),
        ("created_at", "timestamp"), ("updated_at", "timestamp"),
    ),
    "reported_events": (
        ("id", "integer"), ("nct_id", "varchar"), ("result_group_id", "integer"), ("ctgov_group_code", "varchar"),
        ("time_frame", "text"), ("event_type", "varchar"), ("default_vocab", "varchar"),
        ("default_assessment", "varchar"), ("subjects_affected", "integer"), ("subjects_at_risk", "integer"),
        ("description", "text"), ("event_count", "integer"), ("organ_system", "varchar"),
        ("adverse_event_term", "varchar"), ("frequency_threshold", "integer"), ("vocab", "varchar"),
        ("assessment", "varchar"),
    ),
    "responsible_parties": (
        ("id", "integer"), ("nct_id", "varchar"), ("responsible_party_type", "varchar"), ("name", "varchar"),
        ("title", "varchar"), ("organization", "varchar"), ("affiliation", "text"), ("old_name_title", "varchar"),
    ),
    "result_agreements": (
        ("id", "integer"), ("nct_id", "varchar"), ("pi_employee", "boolean"), ("agreement", "text"),
        ("restriction_type", "varchar"), ("other_details", "text"), ("restrictive_agreement", "boolean"),
    ),
    "result_contacts": (
        ("id", "integer"), ("nct_id", "varchar"), ("organization", "varchar"), ("name", "varchar"),
        ("phone", "varchar"), ("email", "varchar"), ("extension", "varchar"),
    ),
    "result_groups": (
        ("id", "integer"), ("nct_id", "varchar"), ("ctgov_group_code", "varchar"), ("result_type", "varchar"),
        ("title", "varchar"), ("description", "text"), ("outcome_id", "integer"),
    ),
    "retractions": (
        ("id", "bigint"), ("reference_id", "integer"), ("pmid", "varchar"), ("source", "varchar"),
        ("nct_id", "varchar"),
    ),
    "search_results": (
        ("id", "integer"), ("nct_id", "varchar"), ("name", "varchar"), ("created_at", "timestamp"),
        ("updated_at", "timestamp"), ("grouping", "varchar"), ("study_search_id", "integer"),
    ),
    "sponsors": (
        ("id", "integer"), ("nct_id", "varchar"), ("agency_class", "varchar"), ("lead_or_collaborator", "varchar"),
        ("name", "varchar"),
    ),
    "studies": (
        ("nct_id", "varchar"), ("nlm_download_date_description", "varchar"), ("study_first_submitted_date", "date"),
        ("results_first_submitted_date", "date"), ("disposition_first_submitted_date", "date"),
        ("last_update_submitted_date", "date"), ("study_first_submitted_qc_date", "date"),
        ("study_first_posted_date", "date"), ("study_first_posted_date_type", "varchar"),
        ("results_first_submitted_qc_date", "date"), ("results_first_posted_date", "date"),
        ("results_first_posted_date_type", "varchar"), ("disposition_first_submitted_qc_date", "date"),
        ("disposition_first_posted_date", "date"), ("disposition_first_posted_date_type", "varchar"),
        ("last_update_submitted_qc_date", "date"), ("last_update_posted_date", "date"),
        ("last_update_posted_date_type", "varchar"), ("start_month_year", "varchar"), ("start_date_type", "varchar"),
        ("start_date", "date"), ("verification_month_year", "varchar"), ("verification_date", "date"),
        ("completion_month_year", "varchar"), ("completion_date_type", "varchar"), ("completion_date", "date"),
        ("primary_completion_month_year", "varchar"), ("primary_completion_date_type", "varchar"),
        ("primary_completion_date", "date"), ("target_duration", "varchar"), ("study_type", "varchar"),
        ("acronym", "varchar"), ("baseline_population", "text"), ("brief_title", "text"), ("official_title", "text"),
        ("overall_status", "varchar"), ("last_known_status", "varchar"), ("phase", "varchar"),
        ("enrollment", "integer"), ("enrollment_type", "varchar"), ("source", "varchar"),
        ("limitations_and_caveats", "varchar"), ("number_of_arms", "integer"), ("number_of_groups", "integer"),
        ("why_stopped", "varchar"), ("has_expanded_access", "boolean"),
        ("expanded_access_type_individual", "boolean"), ("expanded_access_type_intermediate", "boolean"),
        ("expanded_access_type_treatment", "boolean"), ("has_dmc", "boolean"), ("is_fda_regulated_drug", "boolean"),
        ("is_fda_regulated_device", "boolean"), ("is_unapproved_device", "boolean"), ("is_ppsd", "boolean"),
        ("is_us_export", "boolean"), ("biospec_retention", "varchar"), ("biospec_description", "text"),
        ("ipd_time_frame", "varchar"), ("ipd_access_criteria", "varchar"), ("ipd_url", "varchar"),
        ("plan_to_share_ipd", "varchar"), ("plan_to_share_ipd_description", "varchar"), ("created_at", "timestamp"),
        ("updated_at", "timestamp"), ("source_class", "varchar"), ("delayed_posting", "boolean"),
        ("expanded_access_nctid", "varchar"), ("expanded_access_status_for_nctid", "varchar"),
        ("fdaaa801_violation", "boolean"), ("baseline_type_units_analyzed", "varchar"),
        ("patient_registry", "boolean"),
    ),
    "study_references": (
        ("id", "integer"), ("nct_id", "varchar"), ("pmid", "varchar"), ("reference_type", "varchar"),
        ("citation", "text"),
    ),
}

