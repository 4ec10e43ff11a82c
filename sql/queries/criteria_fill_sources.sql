-- Provenance of studies named in a criteria fill (:ids text[]) → nct_id, source_kind, source_name, lacks, has_summary.
SELECT ss.nct_id, ss.source_kind, ss.source_name, ss.lacks,
       EXISTS (SELECT 1 FROM ctgov.brief_summaries b WHERE b.nct_id = ss.nct_id) AS has_summary
FROM app.study_sources ss
JOIN ctgov.studies s ON s.nct_id = ss.nct_id
WHERE ss.nct_id = ANY(CAST(:ids AS text[]))
