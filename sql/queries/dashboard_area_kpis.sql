-- KPIs of a place filter: the matching trials' sites inside the filter's area and the countries they are in (the
-- Sites and Countries KPIs with a country, state or radius filter). Needs CTE area (map_area.sql). Parameters:
-- :country_spellings, :country_names (as dashboard_kpis.sql: one country per ISO code). Output: sites, countries.
SELECT count(*) AS sites, count(DISTINCT COALESCE(cn.name, a.country)) AS countries
FROM area a
LEFT JOIN unnest(CAST(:country_spellings AS text[]), CAST(:country_names AS text[])) AS cn(spelling, name)
  ON cn.spelling = a.country
