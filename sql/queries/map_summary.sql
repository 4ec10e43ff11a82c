-- How many sites and trials the map covers, and how many grid cells each aggregation step would draw.
-- Needs CTE area (map_area.sql). Output: sites, located, trials, trials_located, cells_0 … cells_6
-- (distinct cells at 0.1°, 0.25°, 0.5°, 1°, 2°, 5° and 10°).
SELECT count(*) AS sites,
       count(*) FILTER (WHERE lat IS NOT NULL) AS located,
       count(DISTINCT nct_id) AS trials,
       count(DISTINCT nct_id) FILTER (WHERE lat IS NOT NULL) AS trials_located,
       count(DISTINCT (floor(lat / 0.1), floor(lon / 0.1))) FILTER (WHERE lat IS NOT NULL) AS cells_0,
       count(DISTINCT (floor(lat / 0.25), floor(lon / 0.25))) FILTER (WHERE lat IS NOT NULL) AS cells_1,
       count(DISTINCT (floor(lat / 0.5), floor(lon / 0.5))) FILTER (WHERE lat IS NOT NULL) AS cells_2,
       count(DISTINCT (floor(lat / 1.0), floor(lon / 1.0))) FILTER (WHERE lat IS NOT NULL) AS cells_3,
       count(DISTINCT (floor(lat / 2.0), floor(lon / 2.0))) FILTER (WHERE lat IS NOT NULL) AS cells_4,
       count(DISTINCT (floor(lat / 5.0), floor(lon / 5.0))) FILTER (WHERE lat IS NOT NULL) AS cells_5,
       count(DISTINCT (floor(lat / 10.0), floor(lon / 10.0))) FILTER (WHERE lat IS NOT NULL) AS cells_6
FROM area
