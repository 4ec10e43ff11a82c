-- Posted results of one trial's primary outcomes: each measurement per group. Params: nct_id.
-- Output: outcome_id, title, time_frame, units, param_type, dispersion_type, classification, category, grp,
-- param_value, dispersion_value, lower_limit, upper_limit (outcomes without measurements give one row of NULLs).
SELECT o.id AS outcome_id, o.title, o.time_frame, o.units, o.param_type, o.dispersion_type,
       om.classification, om.category, coalesce(rg.title, om.ctgov_group_code) AS grp, om.param_value,
       om.dispersion_value, om.dispersion_lower_limit_raw AS lower_limit, om.dispersion_upper_limit_raw AS upper_limit
FROM ctgov.outcomes o
LEFT JOIN ctgov.outcome_measurements om ON om.outcome_id = o.id
LEFT JOIN ctgov.result_groups rg ON rg.id = om.result_group_id
WHERE o.nct_id = :nct_id AND upper(o.outcome_type) = 'PRIMARY'
ORDER BY o.id, om.id
