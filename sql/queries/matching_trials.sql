-- What trial relevance and the eligibility rules read for the given trials. Parameters: :ids (text[]).
-- Output: nct_id, brief_title, official_title, conditions[] (names as registered), mesh_list[] and mesh_ancestors[]
-- (browse_conditions rows by mesh_type), keywords[], minimum_age, maximum_age, gender, healthy_volunteers, criteria,
-- countries[] (not removed), site_count.
SELECT s.nct_id,
       s.brief_title,
       s.official_title,
       ARRAY(SELECT c.name FROM ctgov.conditions c WHERE c.nct_id = s.nct_id ORDER BY c.id) AS conditions,
       ARRAY(SELECT b.mesh_term FROM ctgov.browse_conditions b
             WHERE b.nct_id = s.nct_id AND b.mesh_type = 'mesh-list' ORDER BY b.id) AS mesh_list,
       ARRAY(SELECT b.mesh_term FROM ctgov.browse_conditions b
             WHERE b.nct_id = s.nct_id AND b.mesh_type = 'mesh-ancestor' ORDER BY b.id) AS mesh_ancestors,
       ARRAY(SELECT k.name FROM ctgov.keywords k WHERE k.nct_id = s.nct_id ORDER BY k.id) AS keywords,
       e.minimum_age,
       e.maximum_age,
       e.gender,
       e.healthy_volunteers,
       e.criteria,
       ARRAY(SELECT DISTINCT co.name FROM ctgov.countries co
             WHERE co.nct_id = s.nct_id AND co.removed IS NOT TRUE) AS countries,
       (SELECT count(*) FROM ctgov.facilities f WHERE f.nct_id = s.nct_id) AS site_count
FROM ctgov.studies s
LEFT JOIN LATERAL (SELECT * FROM ctgov.eligibilities el WHERE el.nct_id = s.nct_id ORDER BY el.id LIMIT 1) e ON true
WHERE s.nct_id = ANY(CAST(:ids AS text[]))
ORDER BY s.nct_id
