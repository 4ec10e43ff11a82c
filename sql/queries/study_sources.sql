-- Provenance of the given studies (:ids text[]) → nct_id, lacks, criteria_source, criteria_format, criteria_as_of.
SELECT nct_id, lacks, criteria_source, criteria_format, criteria_as_of
FROM app.study_sources
WHERE nct_id = ANY(CAST(:ids AS text[]))
