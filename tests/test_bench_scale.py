"""Smoke test of the registry benchmark at a small size: both computations must agree (not a timing test)."""

from __future__ import annotations

import os

import pytest

from devtools import bench_scale, synth
from devtools.bench import DASHBOARD_FILTERS
from services.data import embedded
from services.data.db import Database
from services.errors import BadInput

pytestmark = [pytest.mark.server,  # a synthetic database of its own
              pytest.mark.skipif(bool(os.environ.get("TEST_DATABASE_URL")),
                                 reason="builds an embedded synthetic database of its own")]


@pytest.fixture(scope="module")
def synthetic_db(tmp_path_factory):
    pgdata = embedded.data_dir() / "synth-test" / "pg"
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    db = Database(embedded.start(pgdata), label="synthetic test")
    from services.data import runtime

    runtime.apply_schema(db)
    report = synth.run(db, 3000, seed=7)
    assert report.rows["studies"] == 3000
    yield db
    db.close()
    embedded.wipe(pgdata)


def test_bench_scale_generator_shapes(synthetic_db):
    db = synthetic_db
    assert db.fetch_value("SELECT count(*) FROM app.study_facets") == 3000
    # every site sits in a real city with coordinates; some studies have none, some many
    assert db.fetch_value("SELECT count(*) FROM ctgov.facilities WHERE latitude IS NULL") == 0
    per_study = db.fetch_rows("SELECT min(number_of_facilities) AS lo, max(number_of_facilities) AS hi "
                              "FROM ctgov.calculated_values")[0]
    assert per_study["lo"] == 0 and 20 <= per_study["hi"] <= 300
    # countries carry AACT's spellings, never ISO codes
    assert db.fetch_value("SELECT count(*) FROM ctgov.facilities WHERE length(country) <= 2") == 0
    statuses = {r["overall_status"] for r in db.fetch_rows("SELECT DISTINCT overall_status FROM ctgov.studies")}
    assert {"COMPLETED", "RECRUITING", "TERMINATED"} <= statuses
    ages = {r["minimum_age"] for r in db.fetch_rows("SELECT DISTINCT minimum_age FROM ctgov.eligibilities")}
    assert {"18 Years", "N/A", "6 Months"} <= ages
    # no update is posted after the day the synthetic registry is "as of" (the Data page shows the newest)
    newest = db.fetch_value("SELECT max(last_update_posted_date) FROM ctgov.studies")
    assert newest is not None and newest <= synth.AS_OF.date()


def test_bench_scale_both_computations_agree(synthetic_db):
    result = bench_scale.run(synthetic_db, runs=1, naive_runs=1)
    assert result["studies"] == 3000 and result["mode"] == "memory"
    assert [r["name"] for r in result["filters"]] == [name for name, _ in DASHBOARD_FILTERS]
    disagreeing = [r["name"] for r in result["filters"] if not r["agree"]]
    assert disagreeing == []
    assert set(result["filters"][0]) >= {"query", "ours_p50_s", "ours_p95_s", "warm_p50_s", "warm_p95_s", "naive_p50_s", "naive_p95_s", "ratio", "agree"}
    paths = {r["path"]: r for r in result["paths"]}
    assert set(paths) >= {"count (every trial)", "export recruiting CSV", "export recruiting JSON", "world map (sites)",
                          "trial detail", "assistant search_trials", "assistant search near",
                          "assistant dashboard_stats", "page 1 by sites", "page 500 by sites",
                          "page 1 by nearest_miles", "page 500 by title"}
    assert [name for name, r in paths.items() if not r["agree"]] == []
    assert paths["page 1 by sites"]["sql_p50_s"] is not None and paths["trial detail"]["sql_p50_s"] is None
    assert "page 500 by sites" in bench_scale.table(result)


def test_bench_paths_alone(synthetic_db):
    result = bench_scale.run_paths(synthetic_db, runs=1, sql_side=False)
    assert result["mode"] == "memory" and result["all_agree"] and len(result["paths"]) >= 30
    assert all(r["sql_p50_s"] is None and r["engine_p50_s"] > 0 for r in result["paths"])
    assert "assistant dashboard_stats" in bench_scale.table(result)


def test_bench_memory_measures_a_fresh_serving_process(db):
    from devtools import bench_memory

    result = bench_memory.run(db.url, names=["none", "near Boston, MA 100 mi"], timeout_s=900)
    pages = [(p["filter"], p["page"]) for p in result["pages"]]
    assert pages == [("none", "app_pages/explore.py"), ("none", "app_pages/map.py"),
                     ("near Boston, MA 100 mi", "app_pages/explore.py"),
                     ("near Boston, MA 100 mi", "app_pages/map.py")]
    assert all(p["errors"] == [] and p["seconds"] > 0 for p in result["pages"])
    assert 0 < result["baseline_rss_mb"] <= result["peak_rss_mb"]
    assert result["final_rss_mb"] <= result["peak_rss_mb"]
    assert result["ok"] == (result["peak_rss_mb"] <= bench_memory.MEMORY_TARGET_MB)
    assert "peak" in bench_memory.table(result)
    with pytest.raises(BadInput):
        bench_memory.run(db.url, names=["no such filter"])
