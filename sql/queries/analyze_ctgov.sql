-- Refresh the planner's statistics of the ctgov tables after an import (autovacuum would do it later).
-- Parameters: none. Output: none.
ANALYZE ctgov.studies;
ANALYZE ctgov.conditions;
ANALYZE ctgov.browse_conditions;
ANALYZE ctgov.keywords;
ANALYZE ctgov.interventions;
ANALYZE ctgov.browse_interventions;
ANALYZE ctgov.eligibilities;
ANALYZE ctgov.facilities;
ANALYZE ctgov.countries;
ANALYZE ctgov.sponsors;
ANALYZE ctgov.calculated_values;
