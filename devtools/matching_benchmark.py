"""Trial-level benchmark of patient matching on TREC-format data, with random and BM25 baselines on the same
pairs.

Input: queries (JSONL, `{"_id", "text"}`: a clinical note) and qrels (TSV `query-id corpus-id score`, 0 not
relevant, 1 excluded, 2 eligible). Every judged trial that is in the database with criteria text is judged for
the patient by services/matching (MeSH relevance, then the eligibility rules in note mode) and ranked as the
app ranks it.
"""

from __future__ import annotations

import csv
import json
import math
import random
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from services.data.db import Database
from services.errors import BadInput
from services.matching.judge import judge
from services.matching.patient import conditions_from_note
from services.matching.store import trial_cases
from services.vocab.mesh import vocabulary

# ../shared beside the repository (the benchmark's development set is not shipped with the app)
DEFAULT_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "trec2022"
GOLD = {0: "not_relevant", 1: "excluded", 2: "eligible"}
PREDICTED = ("eligible", "uncertain", "excluded", "not_relevant")
RANDOM_SEEDS = tuple(range(10))
NDCG_NOTE = (
    "ndcg_at_10 averages over patients with at least one relevant judged trial (with none there is no "
    "ideal ranking); ndcg_at_10_trec_eval counts those patients as 0, as trec_eval does."
)


# --- Metrics
# -------------------------------------------------------------------------------------------------------


def dcg(gains: Sequence[float], k: int) -> float:
    """Discounted cumulative gain of the first k gains (gain / log2(rank + 1), TREC's linear gains)."""
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains[:k]))


def ndcg(ranked_gains: Sequence[float], k: int = 10) -> float | None:
    """nDCG@k of a ranking's gains against the ideal order of the same gains; None when every gain is 0."""
    ideal = dcg(sorted(ranked_gains, reverse=True), k)
    return dcg(ranked_gains, k) / ideal if ideal > 0 else None


def mean_ndcg(values: Sequence[float | None]) -> tuple[float, float]:
    """(mean over patients with an ideal ranking, mean counting the others as 0)."""
    known = [v for v in values if v is not None]
    return (sum(known) / len(known) if known else 0.0, sum(known) / len(values) if values else 0.0)


def share(hits: int, total: int) -> float | None:
    """hits / total, None for an empty total."""
    return hits / total if total else None


# --- BM25 (rank_bm25 is not a dependency; Okapi BM25 is these few lines)
# ------------------------------------------

_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def bm25_scores(query: str, docs: Mapping[str, str], k1: float = 1.2, b: float = 0.75) -> dict[str, float]:
    """Okapi BM25 of each document for the query, with document frequencies over `docs`."""
    tokens = {key: _words(text) for key, text in docs.items()}
    avg = sum(len(t) for t in tokens.values()) / max(len(tokens), 1)
    df = Counter(w for t in tokens.values() for w in set(t))
    n = len(tokens)
    out: dict[str, float] = {}
    for key, words in tokens.items():
        tf = Counter(words)
        out[key] = sum(
            math.log(1 + (n - df[q] + 0.5) / (df[q] + 0.5))
            * tf[q]
            * (k1 + 1)
            / (tf[q] + k1 * (1 - b + b * len(words) / (avg or 1)))
            for q in set(_words(query))
            if q in tf
        )
    return out


# --- Input
# ---------------------------------------------------------------------------------------------------------


def read_queries(path: Path) -> dict[str, str]:
    """Patient id → note text from a JSONL file."""
    out: dict[str, str] = {}
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                out[str(row["_id"])] = str(row["text"])
            except (ValueError, KeyError, TypeError) as exc:
                raise BadInput(f"{path} line {n}: expected a JSON object with _id and text") from exc
    return out


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """Patient id → {NCT id: grade 0/1/2} from a TSV with a `query-id corpus-id score` header."""
    out: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8", newline="") as fh:
        for n, row in enumerate(csv.DictReader(fh, delimiter="\t"), start=2):
            try:
                grade = int(row["score"])
                out.setdefault(row["query-id"], {})[row["corpus-id"]] = grade
            except (ValueError, KeyError, TypeError) as exc:
                raise BadInput(
                    f"{path} line {n}: expected query-id, corpus-id and a score 0, 1 or 2"
                ) from exc
            if grade not in GOLD:
                raise BadInput(f"{path} line {n}: score {grade} is not 0, 1 or 2")
    return out


# --- The run
# -------------------------------------------------------------------------------------------------------


def _order_ndcg(
    order: Callable[[str, list[str]], list[str]], grades: Mapping[str, Mapping[str, int]]
) -> list[float | None]:
    return [ndcg([grades[q][t] for t in order(q, list(grades[q]))]) for q in grades]


def _shuffled(rng: random.Random) -> Callable[[str, list[str]], list[str]]:
    return lambda q, ts: rng.sample(sorted(ts), len(ts))


def run_benchmark(db: Database, queries_path: Path, qrels_path: Path) -> dict[str, Any]:
    """Judge and rank every judged pair on a trial with criteria text; the metrics, the confusion table and
    the baselines."""
    started = time.perf_counter()
    queries, qrels = read_queries(queries_path), read_qrels(qrels_path)
    cases = trial_cases(db, sorted({t for q in qrels.values() for t in q}))
    usable = {t: c for t, c in cases.items() if (c.criteria or "").strip()}
    grades = {
        q: {t: g for t, g in judged.items() if t in usable} for q, judged in qrels.items() if q in queries
    }
    grades = {q: g for q, g in grades.items() if g}
    mesh = vocabulary()
    confusion: Counter[tuple[str, str]] = Counter()
    app_order: dict[str, list[str]] = {}
    patients: list[dict[str, Any]] = []
    for q in sorted(grades):
        note = queries[q]
        found = conditions_from_note(note, mesh)
        headings = found.headings
        judged = [judge(mesh, note, headings, usable[t], prominence=found.prominence) for t in grades[q]]
        judged.sort(key=lambda j: j.key)
        app_order[q] = [j.nct_id for j in judged]
        for j in judged:
            confusion[(GOLD[grades[q][j.nct_id]], j.verdict)] += 1
        patients.append(
            {
                "query_id": q,
                "headings": sorted(mesh.name(u) for u in headings),
                "ranked": [
                    {
                        "nct_id": j.nct_id,
                        "gold": grades[q][j.nct_id],
                        "verdict": j.verdict,
                        "reason": j.reason,
                    }
                    for j in judged
                ],
            }
        )
    app_ndcg = _order_ndcg(lambda q, ts: app_order[q], grades)
    docs = {t: " ".join([c.record.title, *c.record.conditions]) for t, c in usable.items()}
    bm25 = {q: bm25_scores(queries[q], {t: docs[t] for t in grades[q]}) for q in grades}
    bm25_ndcg = _order_ndcg(lambda q, ts: sorted(ts, key=lambda t: (-bm25[q][t], t)), grades)
    random_means = [mean_ndcg(_order_ndcg(_shuffled(random.Random(seed)), grades)) for seed in RANDOM_SEEDS]
    relevant = sum(n for (g, _), n in confusion.items() if g != "not_relevant")
    kept = sum(n for (g, p), n in confusion.items() if g != "not_relevant" and p != "not_relevant")
    irrelevant = sum(n for (g, _), n in confusion.items() if g == "not_relevant")
    called = confusion[("not_relevant", "not_relevant")]
    both = [
        (g, p)
        for (g, p), n in confusion.items()
        for _ in range(n)
        if g != "not_relevant" and p != "not_relevant"
    ]
    right = sum((g == "excluded") == (p == "excluded") for g, p in both)
    app_mean, app_zero = mean_ndcg(app_ndcg)
    bm25_mean, bm25_zero = mean_ndcg(bm25_ndcg)
    return {
        "patients": len(grades),
        "patients_without_relevant": sum(v is None for v in app_ndcg),
        "pairs": sum(len(g) for g in grades.values()),
        "ndcg_at_10": round(app_mean, 4),
        "ndcg_at_10_trec_eval": round(app_zero, 4),
        "ndcg_note": NDCG_NOTE,
        "relevant_recall": _round(share(kept, relevant)),
        "not_relevant_recall": _round(share(called, irrelevant)),
        "excluded_accuracy": _round(share(right, len(both))),
        "excluded_accuracy_pairs": len(both),
        "confusion": {g: {p: confusion[(g, p)] for p in PREDICTED} for g in GOLD.values()},
        "baselines": {
            "bm25_title_conditions": {
                "ndcg_at_10": round(bm25_mean, 4),
                "ndcg_at_10_trec_eval": round(bm25_zero, 4),
            },
            "random": {
                "seeds": len(RANDOM_SEEDS),
                "ndcg_at_10": round(sum(m for m, _ in random_means) / len(random_means), 4),
                "ndcg_at_10_trec_eval": round(sum(z for _, z in random_means) / len(random_means), 4),
            },
        },
        "seconds": round(time.perf_counter() - started, 1),
        "per_patient": patients,
    }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def format_report(result: Mapping[str, Any]) -> str:
    """The measurements as a short text table."""
    bm25, rand = result["baselines"]["bm25_title_conditions"], result["baselines"]["random"]
    lines = [
        f"patients {result['patients']} ({result['patients_without_relevant']} without a relevant judged "
        f"trial), pairs {result['pairs']}",
        f"nDCG@10              app {result['ndcg_at_10']}   BM25 {bm25['ndcg_at_10']}   "
        f"random {rand['ndcg_at_10']}",
        f"nDCG@10 (0 for none) app {result['ndcg_at_10_trec_eval']}   BM25 {bm25['ndcg_at_10_trec_eval']}   "
        f"random {rand['ndcg_at_10_trec_eval']}",
        f"relevant_recall {result['relevant_recall']}   "
        f"not_relevant_recall {result['not_relevant_recall']}   "
        f"excluded_accuracy {result['excluded_accuracy']} (n={result['excluded_accuracy_pairs']})",
        result["ndcg_note"],
        "gold \\ called   " + "  ".join(f"{p:>12}" for p in PREDICTED),
    ]
    for gold, row in result["confusion"].items():
        lines.append(f"{gold:<15}" + "  ".join(f"{row[p]:>12}" for p in PREDICTED))
    return "\n".join(lines)
