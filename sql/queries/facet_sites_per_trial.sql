-- Facet: number of sites per study, in buckets. Needs CTE m(nct_id). Output: value (bucket order key), n.
SELECT CASE WHEN c.k = 0 THEN 0 WHEN c.k = 1 THEN 1 WHEN c.k <= 5 THEN 2 WHEN c.k <= 20 THEN 3
            WHEN c.k <= 100 THEN 4 ELSE 5 END AS value,
       count(*) AS n
FROM (SELECT m.nct_id, count(f.nct_id) AS k
      FROM m LEFT JOIN ctgov.facilities f ON f.nct_id = m.nct_id
      GROUP BY m.nct_id) c
GROUP BY 1
