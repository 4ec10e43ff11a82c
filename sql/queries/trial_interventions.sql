-- Interventions of one study with their other names. Params: nct_id.
-- Output: intervention_id, intervention_type, name, description, other_names (joined by '; ').
SELECT i.id AS intervention_id,
       i.intervention_type,
       i.name,
       i.description,
       (SELECT string_agg(o.name, '; ' ORDER BY o.id) FROM ctgov.intervention_other_names o
         WHERE o.intervention_id = i.id) AS other_names
FROM ctgov.interventions i
WHERE i.nct_id = :nct_id
ORDER BY i.id
