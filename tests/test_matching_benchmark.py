"""The matching benchmark: its metrics on hand-made inputs, and `bench matching` end to end on the test
database."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from devtools.matching_benchmark import bm25_scores, dcg, mean_ndcg, ndcg, read_qrels, share
from services.cli import main
from services.errors import BadInput

MINI = Path(__file__).parent / "fixtures" / "trec_mini"


def test_ndcg_known_values() -> None:
    assert ndcg([2, 1, 0]) == 1.0
    # reversed: (0 + 1/log2 3 + 2/log2 4) / (2 + 1/log2 3)
    assert ndcg([0, 1, 2]) == pytest.approx((1 / math.log2(3) + 1) / (2 + 1 / math.log2(3)))
    assert ndcg([0, 1, 2]) == pytest.approx(0.61991, abs=1e-5)
    assert ndcg([0, 0, 0]) is None  # no ideal ranking
    assert dcg([1] * 12, 10) == pytest.approx(sum(1 / math.log2(i + 2) for i in range(10)))  # cut at 10
    assert ndcg([0] * 10 + [2]) == 0.0  # the only relevant trial below the cut-off


def test_mean_ndcg_reports_patients_without_relevant_trials_both_ways() -> None:
    assert mean_ndcg([1.0, 0.5, None]) == (0.75, 0.5)
    assert share(3, 4) == 0.75 and share(0, 0) is None


def test_bm25_ranks_the_document_that_shares_rare_words_first() -> None:
    scores = bm25_scores(
        "chronic heartburn and reflux",
        {
            "A": "Esomeprazole for gastroesophageal reflux and heartburn",
            "B": "Exercise for chronic low back pain",
            "C": "Vitamin D in healthy volunteers",
        },
    )
    assert scores["A"] > scores["B"] > scores["C"] == 0


def test_read_qrels_rejects_a_grade_outside_0_to_2(tmp_path: Path) -> None:
    bad = tmp_path / "qrels.tsv"
    bad.write_text("query-id\tcorpus-id\tscore\nq1\tNCT1\t3\n", encoding="utf-8")
    with pytest.raises(BadInput, match="line 2"):
        read_qrels(bad)


def test_bench_matching_end_to_end(db, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: ANN001
    code = main(
        [
            "bench",
            "matching",
            "--queries",
            str(MINI / "queries.jsonl"),
            "--qrels",
            str(MINI / "qrels.tsv"),
            "--json",
            "--per-patient",
        ]
    )
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["patients"] == 2 and result["pairs"] == 16  # the NCT id not in the database is left out
    assert sum(sum(row.values()) for row in result["confusion"].values()) == 16
    for key in (
        "ndcg_at_10",
        "ndcg_at_10_trec_eval",
        "relevant_recall",
        "not_relevant_recall",
        "excluded_accuracy",
    ):
        assert 0.0 <= result[key] <= 1.0, key
    assert set(result["baselines"]) == {"bm25_title_conditions", "random"}
    assert "trec_eval" in result["ndcg_note"]
    reflux = next(p for p in result["per_patient"] if p["query_id"] == "trec-202244")
    assert "Heartburn" in reflux["headings"]
    verdicts = [t["verdict"] for t in reflux["ranked"]]
    order = ["eligible", "uncertain", "excluded", "not_relevant"]
    assert verdicts == sorted(verdicts, key=order.index)  # ranked as the app ranks: by verdict first
    first = reflux["ranked"][0]
    assert first["gold"] > 0 and "Gastroesophageal Reflux" in first["reason"]


def test_bench_matching_missing_file_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["bench", "matching", "--queries", str(tmp_path / "none.jsonl"), "--qrels", str(MINI / "qrels.tsv")]
    )
    assert code == 2 and "no such file" in capsys.readouterr().err
