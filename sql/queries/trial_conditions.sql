-- Conditions and keywords of one study, conditions first, each in registry order. Params: nct_id.
-- Output: kind ('condition'|'keyword'), name.
SELECT x.kind, x.name
FROM (SELECT 0 AS rank, 'condition' AS kind, c.name, c.id FROM ctgov.conditions c WHERE c.nct_id = :nct_id
      UNION ALL
      SELECT 1 AS rank, 'keyword' AS kind, k.name, k.id FROM ctgov.keywords k WHERE k.nct_id = :nct_id) x
ORDER BY x.rank, x.id
