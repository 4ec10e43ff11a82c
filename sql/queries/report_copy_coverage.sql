-- The report's first page: how big our copy is and how recent, and of the trials matching the patient's search
-- filters without a place (CTE m) how many have no site with coordinates, which no distance-limited search can see.
-- Needs CTE m(nct_id). Parameters: those of m.
-- Output: studies, newest_update, oldest_update, matching, without_located_site.
SELECT (SELECT count(*) FROM ctgov.studies) AS studies,
       (SELECT max(last_update_posted_date) FROM ctgov.studies) AS newest_update,
       (SELECT min(last_update_posted_date) FROM ctgov.studies) AS oldest_update,
       (SELECT count(*) FROM m) AS matching,
       (SELECT count(*) FROM m
         WHERE NOT EXISTS (SELECT 1 FROM ctgov.facilities f
                            WHERE f.nct_id = m.nct_id AND f.latitude IS NOT NULL AND f.longitude IS NOT NULL))
           AS without_located_site
