-- Columns of ctgov.eligibilities except its serial id (no parameters) → column_name, in table order.
SELECT column_name FROM information_schema.columns
WHERE table_schema = 'ctgov' AND table_name = 'eligibilities' AND column_name <> 'id'
ORDER BY ordinal_position
