-- Sites and distinct trials per country (AACT spelling) on the map. Needs CTE area.
-- Output: country, sites, trials.
SELECT country, count(*) AS sites, count(DISTINCT nct_id) AS trials
FROM area
WHERE country IS NOT NULL AND btrim(country) <> ''
GROUP BY country
ORDER BY count(DISTINCT nct_id) DESC, country
