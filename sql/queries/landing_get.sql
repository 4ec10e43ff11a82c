-- One stored landing value of one generation (sql/schema/070_app_landing.sql).
SELECT value::text FROM app.landing WHERE stamp = :stamp AND name = :name
