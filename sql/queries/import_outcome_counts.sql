-- How many studies of an import were new, replaced, enriched or kept (after the merge). Parameters: none.
-- Output: action, studies.
SELECT CASE WHEN NOT d.take AND EXISTS (SELECT 1 FROM _enriched e WHERE e.nct_id = d.nct_id) THEN 'enriched'
            ELSE d.action END AS action,
       count(*) AS studies
FROM _decide d
GROUP BY 1
