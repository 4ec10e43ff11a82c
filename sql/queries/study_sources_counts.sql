-- Full and partial records (no parameters) → studies, partial (source lacked some field), criteria_added.
SELECT (SELECT count(*) FROM ctgov.studies) AS studies,
       count(*) FILTER (WHERE cardinality(ss.lacks) > 0) AS partial,
       count(*) FILTER (WHERE ss.criteria_source IS NOT NULL) AS criteria_added
FROM app.study_sources ss
JOIN ctgov.studies s ON s.nct_id = ss.nct_id
