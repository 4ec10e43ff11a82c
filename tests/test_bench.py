"""Benchmark helpers: percentiles, summaries, the representative filters and the `bench dashboard` command."""

from __future__ import annotations

import json

import pytest

from devtools import bench
from services.cli import main
from services.dashboard import search


def test_bench_percentile_interpolates():
    assert bench.percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert bench.percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert bench.percentile([1.0, 2.0, 3.0, 4.0, 5.0], 90) == pytest.approx(4.6)
    assert bench.percentile([7.0], 90) == 7.0
    with pytest.raises(ValueError):
        bench.percentile([], 50)
    with pytest.raises(ValueError):
        bench.percentile([1.0], 120)


def test_bench_summarize():
    assert bench.summarize([0.5, 0.1, 0.3, 0.2, 0.4]) == {
        "runs": 5, "p50_s": 0.3, "p90_s": 0.46, "min_s": 0.1, "max_s": 0.5, "mean_s": 0.3}


def test_bench_time_calls_counts_and_returns_last_result():
    calls = []
    times, last = bench.time_calls(lambda: calls.append(1) or len(calls), 5)
    assert len(times) == 5 and all(t >= 0 for t in times)
    assert last == 5
    with pytest.raises(ValueError):
        bench.time_calls(lambda: None, 0)


def test_bench_filters_are_clean_share_links():
    names = [name for name, _ in bench.DASHBOARD_FILTERS]
    assert names == ["none", "common condition", "rare condition", "recruiting + phase 2", "near Boston, MA 100 mi",
                     "age 62 + male", "one country", "industry-funded", "start 2015–2020"]
    parsed = {name: bench.parse_query(query) for name, query in bench.DASHBOARD_FILTERS}
    for f in parsed.values():
        assert bench.parse_query(f.query_string()) == f
    assert parsed["none"].is_default() is False and parsed["none"].status == ()
    near = parsed["near Boston, MA 100 mi"]
    assert (near.near, near.radius_miles()) == ("Boston, MA", 100.0)
    assert (parsed["age 62 + male"].age, parsed["age 62 + male"].sex) == (62.0, "MALE")
    with pytest.raises(ValueError):
        bench.parse_query("phase=PHASE9")


def test_bench_dashboard_reports_each_filter(db):
    filters = bench.DASHBOARD_FILTERS[:3]
    result = bench.bench_dashboard(runs=2, filters=filters, db=db, target_s=60.0)
    assert [r["name"] for r in result["filters"]] == ["none", "common condition", "rare condition"]
    for row, (_, query) in zip(result["filters"], filters, strict=True):
        assert row["runs"] == 2 and row["min_s"] <= row["p50_s"] <= row["max_s"]
        assert row["matching_trials"] == search.count_trials(bench.parse_query(query), db=db)
        assert row["errors"] == {}
    assert result["ok"] is True and result["worst_p50_s"] == max(r["p50_s"] for r in result["filters"])
    assert "worst p50" in bench.dashboard_table(result)


def test_bench_dashboard_command(db, capsys):
    code = main(["bench", "dashboard", "--runs", "5", "--json", "--target", "60"])
    out, _ = capsys.readouterr()
    data = json.loads(out)
    assert code == 0
    assert [r["query"] for r in data["filters"]] == [q for _, q in bench.DASHBOARD_FILTERS]
    assert all(r["runs"] == 5 for r in data["filters"])


def test_bench_dashboard_command_refuses_few_runs(capsys):
    assert main(["bench", "dashboard", "--runs", "2"]) == 2
    assert "at least 5" in capsys.readouterr().err


def test_bench_views_times_every_view_for_every_filter(db):
    from devtools import bench_views

    result = bench_views.bench_views(db, runs=5, names=["dashboard"], target_s=60.0)
    assert [(r["view"], r["query"]) for r in result["rows"]] == [("dashboard", q) for _, q in bench.DASHBOARD_FILTERS]
    assert all(r["runs"] == 5 and r["min_s"] <= r["p50_s"] <= r["max_s"] for r in result["rows"])
    assert result["ok"] is True and "worst p50" in bench_views.views_table(result)


def test_bench_views_reports_a_failing_view_and_goes_on(db, monkeypatch):
    from devtools import bench_views

    def broken(f, db, eng):
        raise RuntimeError("no such column")

    monkeypatch.setitem(bench_views.VIEWS, "broken", broken)
    result = bench_views.bench_views(db, runs=5, names=["broken", "dashboard"], target_s=60.0)
    errors = [r for r in result["rows"] if "error" in r]
    assert len(errors) == len(bench.DASHBOARD_FILTERS) and "no such column" in errors[0]["error"]
    assert len(result["rows"]) == 2 * len(bench.DASHBOARD_FILTERS) and result["ok"] is False
    assert "ERROR" in bench_views.views_table(result)


def test_bench_views_command_refuses_an_unknown_view(capsys):
    assert main(["bench", "views", "--views", "nonsense"]) == 2
    assert "unknown view" in capsys.readouterr().err
