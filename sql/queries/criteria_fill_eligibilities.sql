-- Current eligibility rows of studies receiving criteria text (:ids text[]) → every column of ctgov.eligibilities.
SELECT * FROM ctgov.eligibilities WHERE nct_id = ANY(CAST(:ids AS text[])) ORDER BY nct_id, id
