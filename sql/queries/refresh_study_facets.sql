-- Rebuild app.study_facets and the condition-term dictionary from ctgov (one row per study, canonical values).
-- Run after every import, inside the import's transaction. Parameters: none. Output: none.
TRUNCATE app.study_facets;
INSERT INTO app.study_facets
WITH lead AS (
    SELECT DISTINCT ON (nct_id) nct_id, name, agency_class
    FROM ctgov.sponsors WHERE lead_or_collaborator = 'lead' ORDER BY nct_id, id
), collab AS (
    SELECT nct_id, count(*) AS k FROM ctgov.sponsors WHERE lead_or_collaborator = 'collaborator' GROUP BY nct_id
), sites AS (
    SELECT nct_id, count(*) AS k,
           array_agg(DISTINCT state ORDER BY state) FILTER (WHERE country = 'United States' AND state IS NOT NULL) AS us_states
    FROM ctgov.facilities GROUP BY nct_id
), ctry AS (
    SELECT nct_id, array_agg(DISTINCT name ORDER BY name) AS names
    FROM ctgov.countries WHERE removed IS NOT TRUE AND name IS NOT NULL GROUP BY nct_id
), itypes AS (
    SELECT nct_id, array_agg(DISTINCT intervention_type ORDER BY intervention_type) AS types
    FROM ctgov.interventions WHERE intervention_type IS NOT NULL GROUP BY nct_id
), elig AS (
    SELECT DISTINCT ON (nct_id) e.nct_id, (CASE WHEN e.minimum_age ~ '^\s*[0-9]+(\.[0-9]+)?\s*[A-Za-z]' THEN substring(e.minimum_age from '^\s*([0-9]+(?:\.[0-9]+)?)')::numeric * (CASE WHEN lower(e.minimum_age) LIKE '%year%' THEN 1.0 WHEN lower(e.minimum_age) LIKE '%month%' THEN 1.0/12 WHEN lower(e.minimum_age) LIKE '%week%' THEN 7.0/365.25 WHEN lower(e.minimum_age) LIKE '%day%' THEN 1.0/365.25 WHEN lower(e.minimum_age) LIKE '%hour%' THEN 1.0/8766 WHEN lower(e.minimum_age) LIKE '%minute%' THEN 1.0/525960 ELSE NULL END) END) AS lo, (CASE WHEN e.maximum_age ~ '^\s*[0-9]+(\.[0-9]+)?\s*[A-Za-z]' THEN substring(e.maximum_age from '^\s*([0-9]+(?:\.[0-9]+)?)')::numeric * (CASE WHEN lower(e.maximum_age) LIKE '%year%' THEN 1.0 WHEN lower(e.maximum_age) LIKE '%month%' THEN 1.0/12 WHEN lower(e.maximum_age) LIKE '%week%' THEN 7.0/365.25 WHEN lower(e.maximum_age) LIKE '%day%' THEN 1.0/365.25 WHEN lower(e.maximum_age) LIKE '%hour%' THEN 1.0/8766 WHEN lower(e.maximum_age) LIKE '%minute%' THEN 1.0/525960 ELSE NULL END) END) AS hi,
           lower(e.maximum_age) LIKE '%year%' AS hi_years, e.gender, e.healthy_volunteers
    FROM ctgov.eligibilities e ORDER BY e.nct_id, e.id
)
SELECT s.nct_id,
       (CASE WHEN upper(s.overall_status) = 'UNKNOWN STATUS' THEN 'UNKNOWN' ELSE upper(regexp_replace(btrim(s.overall_status), '[^A-Za-z0-9]+', '_', 'g')) END),
       string_to_array((CASE WHEN s.phase IS NULL OR btrim(s.phase) = '' THEN NULL WHEN upper(s.phase) IN ('N/A', 'NOT APPLICABLE') THEN 'NA' ELSE replace(replace(upper(replace(s.phase, ' ', '')), 'EARLYPHASE1', 'EARLY_PHASE1'), '|', '/') END), '/'),
       s.phase,
       (CASE WHEN upper(s.study_type) LIKE 'OBSERVATIONAL%' THEN 'OBSERVATIONAL' ELSE upper(regexp_replace(btrim(s.study_type), '[^A-Za-z0-9]+', '_', 'g')) END),
       (CASE WHEN upper(lead.agency_class) IN ('U.S. FED', 'US FED') THEN 'FED' ELSE upper(regexp_replace(btrim(lead.agency_class), '[^A-Za-z0-9]+', '_', 'g')) END),
       lead.name,
       s.enrollment,
       s.enrollment_type,
       s.start_date,
       extract(year FROM s.start_date)::int,
       CASE WHEN s.primary_completion_date >= s.start_date THEN
            CASE WHEN (s.primary_completion_date - s.start_date) / 30 < 12 THEN 0
                 WHEN (s.primary_completion_date - s.start_date) / 30 < 24 THEN 1
                 WHEN (s.primary_completion_date - s.start_date) / 30 < 36 THEN 2
                 WHEN (s.primary_completion_date - s.start_date) / 30 < 60 THEN 3
                 WHEN (s.primary_completion_date - s.start_date) / 30 < 120 THEN 4 ELSE 5 END
            ELSE -1 END,
       elig.lo, elig.hi, elig.hi_years, elig.gender, elig.healthy_volunteers,
       (s.results_first_posted_date IS NOT NULL OR COALESCE(cv.were_results_reported, false)),
       CASE WHEN upper(s.overall_status) IN ('COMPLETED', 'TERMINATED')
            THEN extract(year FROM COALESCE(s.primary_completion_date, s.completion_date))::int END,
       COALESCE(sites.k, 0),
       COALESCE(collab.k, 0),
       ctry.names,
       sites.us_states,
       itypes.types,
       NULLIF(lower(btrim(s.why_stopped)), '')
FROM ctgov.studies s
LEFT JOIN lead ON lead.nct_id = s.nct_id
LEFT JOIN collab ON collab.nct_id = s.nct_id
LEFT JOIN sites ON sites.nct_id = s.nct_id
LEFT JOIN ctry ON ctry.nct_id = s.nct_id
LEFT JOIN itypes ON itypes.nct_id = s.nct_id
LEFT JOIN elig ON elig.nct_id = s.nct_id
LEFT JOIN ctgov.calculated_values cv ON cv.nct_id = s.nct_id;
TRUNCATE app.term_studies;
DELETE FROM app.terms;
INSERT INTO app.terms (term, words)
SELECT t, regexp_split_to_array(t, '[^[:alnum:]_]+') FROM (SELECT DISTINCT t FROM (
    SELECT downcase_name AS t FROM ctgov.conditions
    UNION SELECT downcase_mesh_term FROM ctgov.browse_conditions
    UNION SELECT downcase_name FROM ctgov.keywords
) x WHERE t IS NOT NULL) d;
INSERT INTO app.term_studies (term_id, nct_id)
SELECT DISTINCT t.term_id, x.nct_id FROM (
    SELECT nct_id, downcase_name AS t FROM ctgov.conditions
    UNION ALL SELECT nct_id, downcase_mesh_term FROM ctgov.browse_conditions
    UNION ALL SELECT nct_id, downcase_name FROM ctgov.keywords
) x JOIN app.terms t ON t.term = x.t;
ANALYZE app.study_facets;
ANALYZE app.terms;
ANALYZE app.term_studies;
INSERT INTO app.meta (key, value) VALUES ('facets_refreshed_at', now()::text)
ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now();
-- The term dictionary's own stamp: the stored search documents hold its ids (search_documents_current.sql).
INSERT INTO app.meta (key, value) VALUES ('terms_refreshed_at', now()::text)
ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now();
