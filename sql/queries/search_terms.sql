-- The term ids (app.terms) of each study's condition names (one per row, repeats kept), own MeSH terms, MeSH
-- ancestors and keywords, for app.study_search. Needs CTE m(nct_id). No parameters.
-- Output: nct_id, condition_terms, mesh_terms, ancestor_terms, keyword_terms (integer[], empty when none).
SELECT x.nct_id,
       coalesce(array_agg(t.term_id ORDER BY t.term_id) FILTER (WHERE x.src = 'c'), '{}') AS condition_terms,
       coalesce(array_agg(DISTINCT t.term_id) FILTER (WHERE x.src = 'm'), '{}') AS mesh_terms,
       coalesce(array_agg(DISTINCT t.term_id) FILTER (WHERE x.src = 'a'), '{}') AS ancestor_terms,
       coalesce(array_agg(DISTINCT t.term_id) FILTER (WHERE x.src = 'k'), '{}') AS keyword_terms
FROM (
    SELECT c.nct_id, c.downcase_name AS term, 'c' AS src FROM ctgov.conditions c JOIN m ON m.nct_id = c.nct_id
    UNION ALL
    SELECT b.nct_id, b.downcase_mesh_term, CASE WHEN b.mesh_type = 'mesh-list' THEN 'm' ELSE 'a' END
    FROM ctgov.browse_conditions b JOIN m ON m.nct_id = b.nct_id
    UNION ALL
    SELECT k.nct_id, k.downcase_name, 'k' FROM ctgov.keywords k JOIN m ON m.nct_id = k.nct_id
) x
JOIN app.terms t ON t.term = x.term
GROUP BY x.nct_id
