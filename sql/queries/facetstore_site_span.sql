-- The range and number of site ids, to read every site in slices of ids (in-process map engine). Params: none.
-- Output: low, high (smallest and largest facilities.id), total (rows).
SELECT min(id) AS low, max(id) AS high, count(*) AS total FROM ctgov.facilities
