-- Indexes the filters and detail views need (AACT has the nct_id ones; the rest are ours). Idempotent.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE INDEX IF NOT EXISTS ix_conditions_nct ON ctgov.conditions (nct_id);
CREATE INDEX IF NOT EXISTS ix_keywords_nct ON ctgov.keywords (nct_id);
CREATE INDEX IF NOT EXISTS ix_browse_conditions_nct ON ctgov.browse_conditions (nct_id);
CREATE INDEX IF NOT EXISTS ix_browse_interventions_nct ON ctgov.browse_interventions (nct_id);
CREATE INDEX IF NOT EXISTS ix_interventions_nct ON ctgov.interventions (nct_id);
CREATE INDEX IF NOT EXISTS ix_intervention_other_names_nct ON ctgov.intervention_other_names (nct_id);
CREATE INDEX IF NOT EXISTS ix_design_groups_nct ON ctgov.design_groups (nct_id);
CREATE INDEX IF NOT EXISTS ix_design_group_interventions_nct ON ctgov.design_group_interventions (nct_id);
CREATE INDEX IF NOT EXISTS ix_designs_nct ON ctgov.designs (nct_id);
CREATE INDEX IF NOT EXISTS ix_eligibilities_nct ON ctgov.eligibilities (nct_id);
CREATE INDEX IF NOT EXISTS ix_facilities_nct ON ctgov.facilities (nct_id);
CREATE INDEX IF NOT EXISTS ix_countries_nct ON ctgov.countries (nct_id);
CREATE INDEX IF NOT EXISTS ix_sponsors_nct ON ctgov.sponsors (nct_id);
CREATE UNIQUE INDEX IF NOT EXISTS ix_calculated_values_nct ON ctgov.calculated_values (nct_id);
CREATE INDEX IF NOT EXISTS ix_brief_summaries_nct ON ctgov.brief_summaries (nct_id);
CREATE INDEX IF NOT EXISTS ix_detailed_descriptions_nct ON ctgov.detailed_descriptions (nct_id);
CREATE INDEX IF NOT EXISTS ix_design_outcomes_nct ON ctgov.design_outcomes (nct_id);
CREATE INDEX IF NOT EXISTS ix_outcomes_nct ON ctgov.outcomes (nct_id);
CREATE INDEX IF NOT EXISTS ix_result_groups_nct ON ctgov.result_groups (nct_id);
CREATE INDEX IF NOT EXISTS ix_reported_events_nct ON ctgov.reported_events (nct_id);
CREATE INDEX IF NOT EXISTS ix_id_information_nct ON ctgov.id_information (nct_id);

CREATE INDEX IF NOT EXISTS ix_studies_status ON ctgov.studies (overall_status);
CREATE INDEX IF NOT EXISTS ix_studies_start ON ctgov.studies (start_date);
CREATE INDEX IF NOT EXISTS ix_studies_last_update ON ctgov.studies (last_update_posted_date);
CREATE INDEX IF NOT EXISTS ix_conditions_trgm ON ctgov.conditions USING gin (downcase_name gin_trgm_ops);
-- Exact condition names: the broader disease as a whole is looked up in the trials' own condition names
-- (services.dashboard.filters.condition_terms_sql).
CREATE INDEX IF NOT EXISTS ix_conditions_name ON ctgov.conditions (downcase_name);
CREATE INDEX IF NOT EXISTS ix_keywords_trgm ON ctgov.keywords USING gin (downcase_name gin_trgm_ops);
CREATE INDEX IF NOT EXISTS ix_browse_conditions_trgm ON ctgov.browse_conditions USING gin (downcase_mesh_term gin_trgm_ops);
CREATE INDEX IF NOT EXISTS ix_interventions_trgm ON ctgov.interventions USING gin (lower(name) gin_trgm_ops);
CREATE INDEX IF NOT EXISTS ix_facilities_geo ON ctgov.facilities (latitude, longitude);
CREATE INDEX IF NOT EXISTS ix_facilities_country ON ctgov.facilities (country);
CREATE INDEX IF NOT EXISTS ix_sponsors_lead ON ctgov.sponsors (lead_or_collaborator, agency_class);
