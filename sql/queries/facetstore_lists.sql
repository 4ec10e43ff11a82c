-- The list columns of app.study_facets, one row per element, for the in-process facet engine.
-- Parameters: none. Output: i (row number in nct_id byte order, from 0), kind (country, state, itype), v.
WITH r AS MATERIALIZED (
    SELECT nct_id, country_names, us_states, intervention_types,
           (row_number() OVER (ORDER BY nct_id COLLATE "C") - 1)::int AS i
    FROM app.study_facets
)
SELECT i, 'country' AS kind, v FROM r, unnest(country_names) v
UNION ALL
SELECT i, 'state', v FROM r, unnest(us_states) v
UNION ALL
SELECT i, 'itype', v FROM r, unnest(intervention_types) v
