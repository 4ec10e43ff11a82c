-- Relevance order of the matching trials for a condition text: reciprocal rank fusion of the full-text rank of
-- each trial's search document and its condition-concept score (services/dashboard/relevance.py).
-- Needs CTE scored(nct_id, concept_score, text_rank): every matching trial's concept-match score and its text rank
-- (NULL: no text hit). Parameters: :k (fusion constant), :gated (keep only trials scoring at least 2/(k + n) for n
-- candidates: what a trial ranked last in both lists would score, so a trial passes with any text hit or in the
-- top half of the concept ranking), :descending (most relevant first), :limit, :offset.
-- Output: nct_id, total (trials past the gate), candidates (every matching trial), fused, text_rank, concept_score.
, ranked AS (
    SELECT nct_id, concept_score, text_rank, count(*) OVER () AS n,
           1.0 / (CAST(:k AS float8) + rank() OVER (ORDER BY concept_score DESC))
           + CASE WHEN text_rank IS NULL THEN 0
                  ELSE 1.0 / (CAST(:k AS float8) + rank() OVER (ORDER BY text_rank DESC NULLS LAST)) END AS fused
    FROM scored
)
SELECT nct_id, count(*) OVER () AS total, n AS candidates, fused, text_rank, concept_score
FROM ranked
WHERE NOT CAST(:gated AS boolean) OR fused >= 2.0 / (CAST(:k AS float8) + n)
ORDER BY CASE WHEN CAST(:descending AS boolean) THEN -fused ELSE fused END, nct_id
LIMIT :limit OFFSET :offset
