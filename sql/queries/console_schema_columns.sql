-- SQL console schema browser: every column of the ctgov tables and views. No parameters. Output: table_name, column_name, data_type, is_view.
SELECT c.table_name,
       c.column_name,
       c.data_type,
       t.table_type = 'VIEW' AS is_view
FROM information_schema.columns AS c
JOIN information_schema.tables AS t
  ON t.table_schema = c.table_schema AND t.table_name = c.table_name
WHERE c.table_schema = 'ctgov'
ORDER BY c.table_name, c.ordinal_position
