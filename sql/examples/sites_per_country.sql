-- Sites per country
-- Number of trial sites and of distinct trials per country, largest first.
SELECT f.country,
       count(*) AS sites,
       count(DISTINCT f.nct_id) AS trials
FROM ctgov.facilities AS f
WHERE f.country IS NOT NULL
GROUP BY f.country
ORDER BY sites DESC, f.country;
