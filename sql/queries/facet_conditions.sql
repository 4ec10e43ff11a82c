-- Facet: top condition names (case-folded), with the most common spelling as label. Needs CTE m(nct_id).
-- Parameters: :top. Output: value, label, n.
SELECT c.downcase_name AS value, mode() WITHIN GROUP (ORDER BY c.name COLLATE "C") AS label, count(DISTINCT c.nct_id) AS n
FROM m JOIN ctgov.conditions c ON c.nct_id = m.nct_id
GROUP BY c.downcase_name
ORDER BY n DESC, c.downcase_name COLLATE "C"
LIMIT :top
