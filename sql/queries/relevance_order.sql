-- Relevance order of the matching trials for a condition text: reciprocal rank fusion of the full-text rank of
-- each trial's search document and its condition-concept score (services/dashboard/relevance.py).
-- Needs CTEs m(nct_id) (the matching trials), docs(nct_id, doc) (their search documents) and
-- concept(nct_id, score) (every matching trial's concept-match score), each CTE read once. Parameters: :tsq (to_tsquery text),
-- :k (fusion constant), :gated (keep only trials scoring at least 2/(k + n) for n candidates: what a trial ranked
-- last in both lists would score, so a trial passes with any text hit or in the top half of the concept ranking),
-- :descending (most relevant first),
-- :limit, :offset. Output: nct_id, total (trials past the gate), candidates (every matching trial), fused, text_rank
-- (NULL: no text hit), concept_score.
, txt AS (
    SELECT d.nct_id, ts_rank('{0.1, 0.2, 0.4, 1.0}', d.doc, q.query, 1) AS r
    FROM docs d, (SELECT to_tsquery('english', CAST(:tsq AS text)) AS query) q
    WHERE d.doc @@ q.query
)
, ranked AS (
    SELECT c.nct_id, c.score AS concept_score, t.r AS text_rank, count(*) OVER () AS n,
           1.0 / (CAST(:k AS float8) + rank() OVER (ORDER BY c.score DESC))
           + CASE WHEN t.r IS NULL THEN 0
                  ELSE 1.0 / (CAST(:k AS float8) + rank() OVER (ORDER BY t.r DESC NULLS LAST)) END AS fused
    FROM concept c
    LEFT JOIN txt t ON t.nct_id = c.nct_id
)
SELECT nct_id, count(*) OVER () AS total, n AS candidates, fused, text_rank, concept_score
FROM ranked
WHERE NOT CAST(:gated AS boolean) OR fused >= 2.0 / (CAST(:k AS float8) + n)
ORDER BY CASE WHEN CAST(:descending AS boolean) THEN -fused ELSE fused END, nct_id
LIMIT :limit OFFSET :offset
