-- Phases, lead sponsors and investigators of chosen facility groups (Sites page, SQL engine): reads the CTEs m(nct_id)
-- and keyed(facility_id, group_key) like feasibility_site_groups.sql. Params: keys text[] (the groups), investigators
-- (boolean: read facility_investigators), top (sponsors and investigators kept per group). Output: group_key, kind
-- ('phase', 'sponsor', 'investigator'), value, n (distinct matching studies), of (values of that kind in the group):
-- every phase, the first `top` others (most studies, then byte order); a study's lead sponsor is its first lead row,
-- as in app.study_facets.
, chosen AS (
    SELECT k.facility_id, f.nct_id, k.group_key
    FROM keyed k JOIN ctgov.facilities f ON f.id = k.facility_id
    WHERE k.group_key = ANY(CAST(:keys AS text[]))
), lead AS (
    SELECT DISTINCT ON (sp.nct_id) sp.nct_id, sp.name
    FROM ctgov.sponsors sp
    WHERE sp.lead_or_collaborator = 'lead' AND sp.nct_id IN (SELECT nct_id FROM chosen)
    ORDER BY sp.nct_id, sp.id
)
, counted AS (
SELECT c.group_key, 'phase' AS kind, s.phase AS value, count(DISTINCT c.nct_id) AS n
FROM chosen c JOIN ctgov.studies s ON s.nct_id = c.nct_id
GROUP BY c.group_key, s.phase
UNION ALL
SELECT c.group_key, 'sponsor', lead.name, count(DISTINCT c.nct_id)
FROM chosen c JOIN lead ON lead.nct_id = c.nct_id
WHERE lead.name IS NOT NULL
GROUP BY c.group_key, lead.name
UNION ALL
SELECT c.group_key, 'investigator', btrim(fi.name), count(DISTINCT c.nct_id)
FROM chosen c JOIN ctgov.facility_investigators fi ON fi.facility_id = c.facility_id
WHERE CAST(:investigators AS boolean) AND NULLIF(btrim(fi.name), '') IS NOT NULL
GROUP BY c.group_key, btrim(fi.name)
), ranked AS (
    SELECT group_key, kind, value, n,
           row_number() OVER (PARTITION BY group_key, kind ORDER BY n DESC, value COLLATE "C" NULLS LAST) AS r,
           count(*) OVER (PARTITION BY group_key, kind) AS of
    FROM counted
)
SELECT group_key, kind, value, n, of FROM ranked WHERE kind = 'phase' OR r <= CAST(:top AS integer)
