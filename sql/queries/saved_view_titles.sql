-- Brief titles of some studies (for the change report's links). Parameters: ids (text[]). Output: nct_id, brief_title.
SELECT nct_id, brief_title FROM ctgov.studies WHERE nct_id = ANY(CAST(:ids AS text[]))
