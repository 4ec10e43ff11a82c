-- Record a snapshot generation of the fields saved views watch (normalised status, results posted, sites per country)
-- for every study. Run after refresh_study_facets in the import's transaction. Parameters: none. Output: none.
-- Only studies whose fields changed get a new version row; the previous one is closed at this generation.
CREATE TEMP TABLE snap_now ON COMMIT DROP AS
SELECT f.nct_id, f.status, f.has_results, s.results_first_posted_date AS results_posted, c.countries, c.country_sites
FROM app.study_facets f
JOIN ctgov.studies s ON s.nct_id = f.nct_id
LEFT JOIN (
    SELECT nct_id, array_agg(country::text ORDER BY country) AS countries, array_agg(k ORDER BY country) AS country_sites
    FROM (SELECT nct_id, country, count(*)::int AS k FROM ctgov.facilities
          WHERE country IS NOT NULL GROUP BY nct_id, country) per_country
    GROUP BY nct_id
) c ON c.nct_id = f.nct_id;
INSERT INTO app.snapshot_generations (facets_stamp, studies)
SELECT (SELECT value FROM app.meta WHERE key = 'facets_refreshed_at'), (SELECT count(*) FROM snap_now);
UPDATE app.study_versions v SET valid_to = currval(pg_get_serial_sequence('app.snapshot_generations', 'generation'))
WHERE v.valid_to IS NULL AND NOT EXISTS (
    SELECT 1 FROM snap_now n WHERE n.nct_id = v.nct_id
      AND (n.status, n.has_results, n.results_posted, n.countries, n.country_sites)
          IS NOT DISTINCT FROM (v.status, v.has_results, v.results_posted, v.countries, v.country_sites));
INSERT INTO app.study_versions (nct_id, valid_from, valid_to, status, has_results, results_posted, countries,
                                country_sites)
SELECT n.nct_id, currval(pg_get_serial_sequence('app.snapshot_generations', 'generation')), NULL, n.status,
       n.has_results, n.results_posted, n.countries, n.country_sites
FROM snap_now n
WHERE NOT EXISTS (SELECT 1 FROM app.study_versions v WHERE v.nct_id = n.nct_id AND v.valid_to IS NULL);
ANALYZE app.study_versions;
