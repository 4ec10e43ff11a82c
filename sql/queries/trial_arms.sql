-- Arms (design groups) of one study with the names of their interventions. Params: nct_id.
-- Output: arm_id, group_type, title, description, interventions (names joined by '; ').
SELECT g.id AS arm_id,
       g.group_type,
       g.title,
       g.description,
       (SELECT string_agg(i.name, '; ' ORDER BY i.id)
          FROM ctgov.design_group_interventions gi
          JOIN ctgov.interventions i ON i.id = gi.intervention_id
         WHERE gi.design_group_id = g.id) AS interventions
FROM ctgov.design_groups g
WHERE g.nct_id = :nct_id
ORDER BY g.id
