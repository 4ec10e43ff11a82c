-- Row count of every ctgov table we mirror. Parameters: none. Output: table_name, row_count.
SELECT 'studies' AS table_name, count(*) AS row_count FROM ctgov.studies
UNION ALL SELECT 'conditions', count(*) FROM ctgov.conditions
UNION ALL SELECT 'browse_conditions', count(*) FROM ctgov.browse_conditions
UNION ALL SELECT 'keywords', count(*) FROM ctgov.keywords
UNION ALL SELECT 'interventions', count(*) FROM ctgov.interventions
UNION ALL SELECT 'browse_interventions', count(*) FROM ctgov.browse_interventions
UNION ALL SELECT 'intervention_other_names', count(*) FROM ctgov.intervention_other_names
UNION ALL SELECT 'design_groups', count(*) FROM ctgov.design_groups
UNION ALL SELECT 'designs', count(*) FROM ctgov.designs
UNION ALL SELECT 'eligibilities', count(*) FROM ctgov.eligibilities
UNION ALL SELECT 'facilities', count(*) FROM ctgov.facilities
UNION ALL SELECT 'countries', count(*) FROM ctgov.countries
UNION ALL SELECT 'sponsors', count(*) FROM ctgov.sponsors
UNION ALL SELECT 'calculated_values', count(*) FROM ctgov.calculated_values
UNION ALL SELECT 'brief_summaries', count(*) FROM ctgov.brief_summaries
UNION ALL SELECT 'detailed_descriptions', count(*) FROM ctgov.detailed_descriptions
UNION ALL SELECT 'design_outcomes', count(*) FROM ctgov.design_outcomes
UNION ALL SELECT 'reported_events', count(*) FROM ctgov.reported_events
UNION ALL SELECT 'id_information', count(*) FROM ctgov.id_information
