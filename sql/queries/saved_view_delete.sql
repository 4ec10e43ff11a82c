-- Delete one saved view. Parameters: id. Output: none (rows affected).
DELETE FROM app.saved_views WHERE id = :id
