"""Criterion-level benchmark against TrialGPT's expert labels, with GPT-4 and majority-label baselines."""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from services.eligibility.labels import BENCHMARK_LABELS, to_benchmark
from services.eligibility.rules import evaluate, patient_facts
from services.errors import BadInput

DEFAULT_PATH = Path(__file__).resolve().parents[1] / "data" / "trialgpt_criterion_dev.jsonl"
LABELS: tuple[str, ...] = (
    "included",
    "not included",
    "excluded",
    "not excluded",
    "not enough information",
    "not applicable",
)
_REQUIRED = ("note", "criterion_type", "criterion_text", "expert_eligibility", "gpt4_eligibility")


# --- Statistics ------------------------------------------------------------------------------------


def wilson_interval(successes: int, total: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval for a proportion (95% by default); (0, 0) when there are no trials."""
    if total <= 0:
        return (0.0, 0.0)
    if not 0 <= successes <= total:
        raise ValueError(f"successes ({successes}) must be between 0 and total ({total})")
    p = successes / total
    denominator = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))


def per_label_f1(gold: Sequence[str], predicted: Sequence[str], labels: Sequence[str] | None = None) -> dict[str, float]:
    """F1 of each label (0 where precision and recall are both undefined or zero)."""
    _check_lengths(gold, predicted)
    if labels is None:
        labels = sorted(set(gold) | set(predicted))
    scores: dict[str, float] = {}
    for label in labels:
        tp = sum(1 for g, p in zip(gold, predicted, strict=True) if g == label and p == label)
        fp = sum(1 for g, p in zip(gold, predicted, strict=True) if g != label and p == label)
        fn = sum(1 for g, p in zip(gold, predicted, strict=True) if g == label and p != label)
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        scores[label] = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return scores


def macro_f1(gold: Sequence[str], predicted: Sequence[str], labels: Sequence[str] | None = None) -> float:
    """Unweighted mean of per-label F1 over the labels that occur in gold or predictions (or those given)."""
    if labels is None:
        labels = sorted(set(gold) | set(predicted))
    scores = per_label_f1(gold, predicted, labels)
    return sum(scores.values()) / len(scores) if scores else 0.0


def cohen_kappa(gold: Sequence[str], predicted: Sequence[str]) -> float:
    """Cohen's kappa: agreement beyond what the two label distributions give by chance."""
    _check_lengths(gold, predicted)
    n = len(gold)
    if n == 0:
        return 0.0
    observed = sum(g == p for g, p in zip(gold, predicted, strict=True)) / n
    gold_counts, predicted_counts = Counter(gold), Counter(predicted)
    expected = sum(gold_counts[label] * predicted_counts[label] for label in gold_counts) / (n * n)
    if math.isclose(expected, 1.0):
        return 1.0 if math.isclose(observed, 1.0) else 0.0
    return (observed - expected) / (1 - expected)


def confusion_matrix(gold: Sequence[str], predicted: Sequence[str], labels: Sequence[str]) -> list[list[int]]:
    """Counts with one row per gold label and one column per predicted label, in ``labels`` order."""
    _check_lengths(gold, predicted)
    position = {label: i for i, label in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for g, p in zip(gold, predicted, strict=True):
        if g not in position or p not in position:
            raise ValueError(f"label outside the matrix: {g!r} / {p!r}")
        matrix[position[g]][position[p]] += 1
    return matrix


def _check_lengths(gold: Sequence[str], predicted: Sequence[str]) -> None:
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold labels but {len(predicted)} predictions")


def score_system(gold: Sequence[str], predicted: Sequence[str], kinds: Sequence[str]) -> dict[str, Any]:
    """Accuracy with its Wilson 95% interval, macro-F1, per-label F1, kappa, confusion matrix and per-kind accuracy."""
    correct = sum(g == p for g, p in zip(gold, predicted, strict=True))
    low, high = wilson_interval(correct, len(gold))
    by_kind: dict[str, dict[str, float | int]] = {}
    for kind in sorted(set(kinds)):
        idx = [i for i, k in enumerate(kinds) if k == kind]
        kind_correct = sum(gold[i] == predicted[i] for i in idx)
        by_kind[kind] = {"rows": len(idx), "accuracy": round(kind_correct / len(idx), 4)}
    return {
        "correct": correct,
        "accuracy": round(correct / len(gold), 4) if gold else 0.0,
        "accuracy_ci95": [round(low, 4), round(high, 4)],
        "macro_f1": round(macro_f1(gold, predicted), 4),
        "f1_by_label": {k: round(v, 4) for k, v in per_label_f1(gold, predicted).items()},
        "kappa": round(cohen_kappa(gold, predicted), 4),
        "by_kind": by_kind,
        "confusion": {"labels": list(LABELS), "rows_are": "expert", "matrix": confusion_matrix(gold, predicted, LABELS)},
    }


# --- Data ------------------------------------------------------------------------------------------


def load_rows(path: str | Path) -> list[dict[str, Any]]:
    """Read the benchmark JSONL, refusing rows that lack a field or carry a label outside TrialGPT's set."""
    file = Path(path)
    if not file.is_file():
        raise BadInput(f"benchmark file not found: {file}")
    rows: list[dict[str, Any]] = []
    with file.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BadInput(f"{file}, line {number}: not valid JSON ({exc.msg})") from None
            missing = [key for key in _REQUIRED if key not in row]
            if missing:
                raise BadInput(f"{file}, line {number}: missing field(s) {', '.join(missing)}")
            kind = row["criterion_type"]
            if kind not in BENCHMARK_LABELS:
                raise BadInput(f"{file}, line {number}: criterion_type {kind!r} is not inclusion/exclusion")
            for key in ("expert_eligibility", "gpt4_eligibility"):
                if row[key] not in BENCHMARK_LABELS[kind]:
                    raise BadInput(f"{file}, line {number}: {key} {row[key]!r} is not a label for an {kind} criterion")
            rows.append(row)
    if not rows:
        raise BadInput(f"{file}: no rows")
    return rows


def run_benchmark(path: str | Path = DEFAULT_PATH) -> dict[str, Any]:
    """Score the rule evaluator, the file's GPT-4 labels and majority-label baselines against the experts."""
    started = time.perf_counter()
    rows = load_rows(path)
    gold = [r["expert_eligibility"] for r in rows]
    kinds = [r["criterion_type"] for r in rows]

    rules: list[str] = []
    for row in rows:
        facts = patient_facts(row["note"])
        judgement = evaluate(row["criterion_text"] or "", row["criterion_type"], facts)
        rules.append(to_benchmark(judgement.label, row["criterion_type"]))
    rules_seconds = time.perf_counter() - started

    gpt4 = [r["gpt4_eligibility"] for r in rows]
    overall_majority = Counter(gold).most_common(1)[0][0]
    by_kind_majority = {
        kind: Counter(g for g, k in zip(gold, kinds, strict=True) if k == kind).most_common(1)[0][0]
        for kind in set(kinds)
    }
    return {
        "file": str(path),
        "rows": len(rows),
        "label_counts": dict(Counter(gold).most_common()),
        "systems": {
            "rules": score_system(gold, rules, kinds),
            "gpt4": score_system(gold, gpt4, kinds),
            "majority_by_kind": score_system(gold, [by_kind_majority[k] for k in kinds], kinds),
            "majority_overall": score_system(gold, [overall_majority] * len(gold), kinds),
        },
        "majority_labels": {"by_kind": by_kind_majority, "overall": overall_majority},
        "rules_seconds": round(rules_seconds, 2),
        "notes": (
            "gpt4 = the GPT-4 labels shipped in the file (TrialGPT); majority baselines always answer the most "
            "common expert label (per criterion kind, or overall), counted on this same file."
        ),
    }


def format_report(result: dict[str, Any]) -> str:
    """The benchmark result as a short table for a terminal."""
    names = {
        "rules": "rules (offline)",
        "gpt4": "GPT-4 (labels in file)",
        "majority_by_kind": "majority label per kind",
        "majority_overall": "majority label overall",
    }
    lines = [
        f"TrialGPT criterion-level benchmark: {result['rows']} rows from {result['file']}",
        "",
        f"{'system':<26}{'accuracy':>9}  {'95% CI':<15}{'macro-F1':>9}{'kappa':>8}  incl / excl",
    ]
    for key, name in names.items():
        s = result["systems"][key]
        low, high = s["accuracy_ci95"]
        kinds = s["by_kind"]
        per_kind = " / ".join(f"{kinds[k]['accuracy']:.3f}" for k in ("inclusion", "exclusion") if k in kinds)
        lines.append(
            f"{name:<26}{s['accuracy']:>9.3f}  {f'{low:.3f}-{high:.3f}':<15}{s['macro_f1']:>9.3f}{s['kappa']:>8.3f}  {per_kind}"
        )
    matrix = result["systems"]["rules"]["confusion"]
    short = {"included": "incl", "not included": "!incl", "excluded": "excl", "not excluded": "!excl",
             "not enough information": "NEI", "not applicable": "n/a"}
    lines += ["", "Rules confusion matrix (rows: expert, columns: rules):",
              " " * 8 + "".join(f"{short[label]:>7}" for label in matrix["labels"])]
    for label, row in zip(matrix["labels"], matrix["matrix"], strict=True):
        lines.append(f"{short[label]:>8}" + "".join(f"{n:>7}" for n in row))
    lines += ["", f"Rules ran in {result['rules_seconds']} s.", result["notes"]]
    return "\n".join(lines)
