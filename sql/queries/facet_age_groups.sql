-- Facet: studies open to each age group (child <18, adult 18–64, older adult 65+), from the age limits in years.
-- Needs CTEs m(nct_id) and ages(nct_id, lo, hi) (lo/hi in years, NULL = no limit). Output: value, n.
SELECT g.value, count(*) AS n
FROM ages a
CROSS JOIN LATERAL (VALUES ('CHILD', COALESCE(a.lo, 0) < 18),
                           ('ADULT', COALESCE(a.lo, 0) < 65 AND COALESCE(a.hi, 200) >= 18),
                           ('OLDER_ADULT', COALESCE(a.hi, 200) >= 65)) AS g(value, ok)
WHERE g.ok
GROUP BY g.value
