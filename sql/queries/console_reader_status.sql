-- SQL console: how this server protects console queries. Parameters: :role. Output: status ('ok', 'missing', 'not_member', 'no_access': can this connection run as the reader role), superuser (may set temp_file_limit), version_num (server_version_num), pid and backend_start (this connection's server process, to tell whether it runs on this machine).
-- From PostgreSQL 16 a member may lack the SET option, so ask for SET there (the nested CASE keeps
-- older servers, which do not know that privilege name, from evaluating it).
SELECT CASE
           WHEN r.oid IS NULL THEN 'missing'
           WHEN CASE
                    WHEN current_setting('server_version_num')::int >= 160000
                        THEN NOT pg_has_role(current_user, r.oid, 'SET')
                    ELSE NOT pg_has_role(current_user, r.oid, 'MEMBER')
                END THEN 'not_member'
           WHEN NOT has_schema_privilege(r.oid, 'ctgov', 'USAGE') THEN 'no_access'
           ELSE 'ok'
       END AS status,
       (SELECT u.rolsuper FROM pg_roles AS u WHERE u.rolname = current_user) AS superuser,
       current_setting('server_version_num')::int AS version_num,
       pg_backend_pid() AS pid,
       (SELECT a.backend_start FROM pg_stat_activity AS a WHERE a.pid = pg_backend_pid()) AS backend_start
FROM (SELECT 1) AS one
LEFT JOIN pg_roles AS r ON r.rolname = :role
