-- SQL console: may this connection set temp_file_limit (a superuser's setting) for its console queries? PostgreSQL 15 and later only (GRANT SET ON PARAMETER). Parameters: none. Output: allowed (boolean).
SELECT has_parameter_privilege(current_user, 'temp_file_limit', 'SET') AS allowed
