-- Studies whose watched fields differ between two snapshot generations, with both versions (NULL: not in the data).
-- Parameters: base, latest (generations, base < latest). Output: nct_id, then status, has_results, results_posted,
-- countries, country_sites as *_before (at base) and *_after (at latest).
WITH changed AS (
    SELECT nct_id FROM app.study_versions WHERE valid_from > :base AND valid_from <= :latest
    UNION
    SELECT nct_id FROM app.study_versions WHERE valid_to > :base AND valid_to <= :latest
)
SELECT c.nct_id,
       b.status AS status_before, b.has_results AS has_results_before, b.results_posted AS results_posted_before,
       b.countries AS countries_before, b.country_sites AS country_sites_before,
       n.status AS status_after, n.has_results AS has_results_after, n.results_posted AS results_posted_after,
       n.countries AS countries_after, n.country_sites AS country_sites_after
FROM changed c
LEFT JOIN app.study_versions b
       ON b.nct_id = c.nct_id AND b.valid_from <= :base AND (b.valid_to IS NULL OR b.valid_to > :base)
LEFT JOIN app.study_versions n
       ON n.nct_id = c.nct_id AND n.valid_from <= :latest AND (n.valid_to IS NULL OR n.valid_to > :latest)
ORDER BY c.nct_id
