-- Recruiting sites in one country
-- Cities with the most sites of recruiting trials in the country you enter as :country (for example United States).
SELECT f.state,
       f.city,
       count(*) AS recruiting_sites,
       count(DISTINCT f.nct_id) AS trials
FROM ctgov.facilities AS f
JOIN ctgov.studies AS s ON s.nct_id = f.nct_id
WHERE s.overall_status = 'RECRUITING'
  AND f.country = :country
GROUP BY f.state, f.city
ORDER BY recruiting_sites DESC, f.state NULLS LAST, f.city
LIMIT 50;
