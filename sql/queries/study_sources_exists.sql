-- Whether app.study_sources exists here (no parameters) → one boolean.
SELECT to_regclass('app.study_sources') IS NOT NULL
