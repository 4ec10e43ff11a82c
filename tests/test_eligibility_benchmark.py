"""Tests for the benchmark statistics and run (devtools/eligibility_benchmark.py) and its CLI command."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from devtools.commands import bench_cmd
from devtools.eligibility_benchmark import (
    DEFAULT_PATH,
    LABELS,
    cohen_kappa,
    confusion_matrix,
    format_report,
    load_rows,
    macro_f1,
    per_label_f1,
    run_benchmark,
    wilson_interval,
)
from services.errors import BadInput

# --- Statistics on small examples computed by hand ------------------------------------------------


def test_eligibility_benchmark_kappa_hand_computed() -> None:
    # observed 3/4; chance (2*1 + 2*3)/16 = 1/2; kappa = (0.75 - 0.5) / (1 - 0.5) = 0.5
    assert cohen_kappa(["a", "a", "b", "b"], ["a", "b", "b", "b"]) == pytest.approx(0.5)
    # observed 1/2 equals chance 1/2 -> 0
    assert cohen_kappa(["a", "b", "a", "b"], ["a", "a", "b", "b"]) == pytest.approx(0.0)
    assert cohen_kappa(["a", "b", "c"], ["a", "b", "c"]) == pytest.approx(1.0)
    # both raters always say the same single label: perfect agreement, no chance correction possible
    assert cohen_kappa(["a", "a"], ["a", "a"]) == 1.0
    # worse than chance: observed 0, chance 1/2 -> -1
    assert cohen_kappa(["a", "b"], ["b", "a"]) == pytest.approx(-1.0)


def test_eligibility_benchmark_macro_f1_hand_computed() -> None:
    gold = ["a", "a", "b", "c"]
    predicted = ["a", "b", "b", "b"]
    # a: P=1, R=1/2 -> 2/3; b: P=1/3, R=1 -> 1/2; c: never predicted, missed once -> 0
    assert per_label_f1(gold, predicted) == pytest.approx({"a": 2 / 3, "b": 0.5, "c": 0.0})
    assert macro_f1(gold, predicted) == pytest.approx(7 / 18)
    # restricting to given labels
    assert macro_f1(gold, predicted, labels=["a", "b"]) == pytest.approx(7 / 12)


def test_eligibility_benchmark_wilson_interval_hand_computed() -> None:
    # 8/10: centre (0.8 + 1.96²/20)/(1 + 1.96²/10) = 0.7167, half-width 0.2266 -> (0.4902, 0.9433)
    low, high = wilson_interval(8, 10)
    assert (low, high) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    # 10/10: the upper end is 1, the lower end is 1/(1 + 1.96²/10) = 0.7225
    assert wilson_interval(10, 10) == pytest.approx((0.7225, 1.0), abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 0.0)
    with pytest.raises(ValueError):
        wilson_interval(11, 10)


def test_eligibility_benchmark_confusion_matrix() -> None:
    gold = ["x", "x", "y", "y", "y"]
    predicted = ["x", "y", "y", "y", "x"]
    assert confusion_matrix(gold, predicted, ["x", "y"]) == [[1, 1], [1, 2]]
    with pytest.raises(ValueError):
        confusion_matrix(gold, predicted[:-1], ["x", "y"])
    with pytest.raises(ValueError):
        confusion_matrix(["x"], ["z"], ["x", "y"])


# --- The dev file ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dev_result() -> dict:
    return run_benchmark(DEFAULT_PATH)


def test_eligibility_benchmark_rules_reach_target_on_dev_file(dev_result: dict) -> None:
    rules = dev_result["systems"]["rules"]
    assert dev_result["rows"] == 493
    assert rules["accuracy"] >= 0.78
    low, high = rules["accuracy_ci95"]
    assert low < rules["accuracy"] < high
    assert 0 < rules["macro_f1"] < 1
    assert sum(map(sum, rules["confusion"]["matrix"])) == 493
    assert rules["confusion"]["labels"] == list(LABELS)


def test_eligibility_benchmark_gpt4_baseline_matches_paper(dev_result: dict) -> None:
    gpt4 = dev_result["systems"]["gpt4"]
    assert gpt4["accuracy"] == pytest.approx(0.864, abs=0.005)
    assert gpt4["macro_f1"] == pytest.approx(0.789, abs=0.005)


def test_eligibility_benchmark_majority_baselines(dev_result: dict) -> None:
    assert dev_result["majority_labels"] == {
        "by_kind": {"inclusion": "included", "exclusion": "not excluded"},
        "overall": "not excluded",
    }
    # 253 "not excluded" of 493 rows; with the per-kind majority, 85 "included" rows are right as well.
    assert dev_result["systems"]["majority_overall"]["accuracy"] == pytest.approx(253 / 493, abs=1e-4)
    assert dev_result["systems"]["majority_by_kind"]["accuracy"] == pytest.approx(338 / 493, abs=1e-4)
    assert dev_result["systems"]["majority_overall"]["kappa"] == 0.0


def test_eligibility_benchmark_report_text(dev_result: dict) -> None:
    text = format_report(dev_result)
    assert "rules (offline)" in text and "GPT-4 (labels in file)" in text
    assert "Rules confusion matrix (rows: expert, columns: rules):" in text


# --- Input checks and the CLI ------------------------------------------------------------------------


def _row(**overrides: object) -> dict:
    row = {
        "note": "0. A 40-year-old man with asthma.\n1. The patient will provide informed consent.",
        "criterion_type": "inclusion",
        "criterion_text": "Age 18 to 65 years",
        "expert_eligibility": "included",
        "gpt4_eligibility": "included",
    }
    row.update(overrides)
    return row


def test_eligibility_benchmark_refuses_bad_rows(tmp_path: Path) -> None:
    bad_json = tmp_path / "bad.jsonl"
    bad_json.write_text(json.dumps(_row()) + "\n{not json\n")
    with pytest.raises(BadInput, match="line 2: not valid JSON"):
        load_rows(bad_json)
    wrong_label = tmp_path / "label.jsonl"
    wrong_label.write_text(json.dumps(_row(expert_eligibility="excluded")) + "\n")
    with pytest.raises(BadInput, match="line 1: expert_eligibility 'excluded' is not a label for an inclusion"):
        load_rows(wrong_label)
    missing = tmp_path / "missing.jsonl"
    missing.write_text(json.dumps({"note": "x"}) + "\n")
    with pytest.raises(BadInput, match="missing field"):
        load_rows(missing)
    with pytest.raises(BadInput, match="not found"):
        load_rows(tmp_path / "absent.jsonl")


def _run_cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    bench_cmd.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.handler(args)


def test_eligibility_benchmark_cli_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "two.jsonl"
    rows = [
        _row(),
        _row(criterion_type="exclusion", criterion_text="Pregnancy", expert_eligibility="not applicable",
             gpt4_eligibility="not excluded"),
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert _run_cli(["bench", "eligibility", "--path", str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["rows"] == 2
    assert result["systems"]["rules"]["accuracy"] == 1.0
    assert result["systems"]["gpt4"]["accuracy"] == 0.5
    assert result["systems"]["rules"]["confusion"]["matrix"][0] == [1, 0, 0, 0, 0, 0]


def test_eligibility_benchmark_cli_is_registered_under_bench() -> None:
    from devtools.commands import bench_eligibility_cmd

    assert bench_eligibility_cmd in bench_cmd.bench_modules()
    for entry in (["-m", "services"], ["-m", "devtools"]):  # services hands bench over to devtools by name
        done = subprocess.run([sys.executable, *entry, "bench", "eligibility", "--help"], capture_output=True,
                              text=True, timeout=120, cwd=Path(__file__).resolve().parents[1])
        assert done.returncode == 0 and "usage: python -m devtools bench eligibility" in done.stdout


def test_services_never_imports_devtools() -> None:
    root = Path(__file__).resolve().parents[1] / "services"
    found = [str(p) for p in root.rglob("*.py") if re.search(r"^\s*(from|import) devtools\b",
                                                              p.read_text(encoding="utf-8"), re.M)]
    assert found == []
