-- Every country with at least one study (removed countries excluded), most studies first. Output: name, n.
SELECT co.name, count(DISTINCT co.nct_id) AS n
FROM ctgov.countries co
WHERE co.removed IS NOT TRUE AND co.name IS NOT NULL
GROUP BY co.name
ORDER BY n DESC, co.name COLLATE "C"
