-- Columns of every ctgov table with their types (format_type), in table order; for the importers' staging
-- tables. Parameters: none. Output: table_name, column_name, type, sequence (the id column's sequence, else
-- NULL).
SELECT c.relname AS table_name, a.attname AS column_name, format_type(a.atttypid, a.atttypmod) AS type,
       CASE WHEN a.attname = 'id'
            THEN pg_get_serial_sequence(quote_ident(n.nspname) || '.' || quote_ident(c.relname), 'id')
       END AS sequence
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'ctgov' AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY c.relname, a.attnum
