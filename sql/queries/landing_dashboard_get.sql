-- The stored landing dashboard of one generation and one set of facet definitions (sql/schema/070_app_landing.sql).
SELECT frames::text FROM app.landing_dashboard WHERE stamp = :stamp AND specs = :specs
