-- Participant flow of one trial: each milestone per period and group. Params: nct_id.
-- Output: period, milestone, grp, count (in AACT's order).
SELECT m.period, m.title AS milestone, coalesce(rg.title, m.ctgov_group_code) AS grp, m.count
FROM ctgov.milestones m
LEFT JOIN ctgov.result_groups rg ON rg.id = m.result_group_id
WHERE m.nct_id = :nct_id
ORDER BY m.id
