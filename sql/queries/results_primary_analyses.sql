-- Statistical analyses of one trial's primary outcomes. Params: nct_id.
-- Output: outcome_id, groups (titles joined by ' vs '), method, param_type, param_value, ci_percent,
-- ci_lower_limit, ci_upper_limit, p_value_raw.
SELECT oa.outcome_id,
       string_agg(coalesce(rg.title, oag.ctgov_group_code), ' vs ' ORDER BY oag.id) AS groups,
       oa.method, oa.param_type, oa.param_value, oa.ci_percent, oa.ci_lower_limit, oa.ci_upper_limit,
       oa.p_value_raw
FROM ctgov.outcome_analyses oa
JOIN ctgov.outcomes o ON o.id = oa.outcome_id
LEFT JOIN ctgov.outcome_analysis_groups oag ON oag.outcome_analysis_id = oa.id
LEFT JOIN ctgov.result_groups rg ON rg.id = oag.result_group_id
WHERE oa.nct_id = :nct_id AND upper(o.outcome_type) = 'PRIMARY'
GROUP BY oa.id, oa.outcome_id, oa.method, oa.param_type, oa.param_value, oa.ci_percent, oa.ci_lower_limit,
         oa.ci_upper_limit, oa.p_value_raw
ORDER BY oa.id
