-- SQL console: can this connection run as the reader role? Parameters: :role. Output: status ('ok', 'missing', 'not_member', 'no_access').
SELECT CASE
           WHEN r.oid IS NULL THEN 'missing'
           WHEN NOT pg_has_role(current_user, r.oid, 'MEMBER') THEN 'not_member'
           WHEN NOT has_schema_privilege(r.oid, 'ctgov', 'USAGE') THEN 'no_access'
           ELSE 'ok'
       END AS status
FROM (SELECT 1) AS one
LEFT JOIN pg_roles AS r ON r.rolname = :role
