-- SQL console: can this connection run as the reader role? Parameters: :role. Output: status ('ok', 'missing', 'not_member', 'no_access').
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
       END AS status
FROM (SELECT 1) AS one
LEFT JOIN pg_roles AS r ON r.rolname = :role
