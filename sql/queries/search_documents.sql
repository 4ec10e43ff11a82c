-- The weighted text-search document of each study in CTE m(nct_id): title and condition names (weight A),
-- keywords and the study's own MeSH terms (B), brief summary (C), English configuration. No parameters.
-- Output: nct_id, doc (tsvector). Stored in app.study_search after every import; ranked on the fly without it.
SELECT m.nct_id,
       setweight(to_tsvector('english', coalesce(s.brief_title, '') || ' ' || coalesce(
           (SELECT string_agg(c.name, ' ; ') FROM ctgov.conditions c WHERE c.nct_id = m.nct_id), '')), 'A')
       || setweight(to_tsvector('english', coalesce(
           (SELECT string_agg(k.name, ' ; ') FROM ctgov.keywords k WHERE k.nct_id = m.nct_id), '') || ' ; ' || coalesce(
           (SELECT string_agg(b.mesh_term, ' ; ') FROM ctgov.browse_conditions b
            WHERE b.nct_id = m.nct_id AND b.mesh_type = 'mesh-list'), '')), 'B')
       || setweight(to_tsvector('english', coalesce(
           (SELECT string_agg(bs.description, ' ') FROM ctgov.brief_summaries bs WHERE bs.nct_id = m.nct_id), '')),
           'C') AS doc
FROM m
JOIN ctgov.studies s ON s.nct_id = m.nct_id
