-- Sites and distinct trials per US state (facilities.state as stored; Puerto Rico by country) on the map.
-- Needs CTE area. Output: state, sites, trials.
SELECT CASE WHEN country = 'Puerto Rico' THEN 'Puerto Rico' ELSE state END AS state,
       count(*) AS sites,
       count(DISTINCT nct_id) AS trials
FROM area
WHERE (country = 'United States' AND state IS NOT NULL AND btrim(state) <> '') OR country = 'Puerto Rico'
GROUP BY 1
ORDER BY count(DISTINCT nct_id) DESC, 1
