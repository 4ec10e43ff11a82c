-- Headline numbers of the trial database. Parameters: none.
-- Output: studies, sites, sites_with_coordinates, freshness (newest last_update_posted_date), oldest_update.
SELECT
    (SELECT count(*) FROM ctgov.studies) AS studies,
    (SELECT count(*) FROM ctgov.facilities) AS sites,
    (SELECT count(*) FROM ctgov.facilities WHERE latitude IS NOT NULL AND longitude IS NOT NULL) AS sites_with_coordinates,
    (SELECT max(last_update_posted_date) FROM ctgov.studies) AS freshness,
    (SELECT min(last_update_posted_date) FROM ctgov.studies) AS oldest_update
