-- Baseline characteristics of one trial: each measurement per group. Params: nct_id.
-- Output: measure, units, param_type, dispersion_type, classification, category, grp, param_value,
-- dispersion_value, dispersion_lower_limit, dispersion_upper_limit (in AACT's order).
SELECT bm.title AS measure, bm.units, bm.param_type, bm.dispersion_type, bm.classification, bm.category,
       coalesce(rg.title, bm.ctgov_group_code) AS grp, bm.param_value, bm.dispersion_value,
       bm.dispersion_lower_limit, bm.dispersion_upper_limit
FROM ctgov.baseline_measurements bm
LEFT JOIN ctgov.result_groups rg ON rg.id = bm.result_group_id
WHERE bm.nct_id = :nct_id
ORDER BY bm.id
