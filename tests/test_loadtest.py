"""The load test: percentiles, loopback-only targets, bounded user loops and the `bench load` command."""

from __future__ import annotations

import http.server
import json
import random
import threading
import time

import pytest

from devtools import loadtest
from services.cli import main
from services.dashboard.filters import Filters
from services.errors import BadInput


def test_loadtest_percentile_interpolates_between_ranks():
    values = [0.5, 0.1, 0.4, 0.2, 0.3]
    assert [loadtest.percentile(values, q) for q in (0, 50, 95, 100)] == pytest.approx([0.1, 0.3, 0.48, 0.5])
    assert loadtest.percentile([], 95) == 0.0
    assert loadtest.percentile([2.0], 95) == 2.0


def test_loadtest_only_talks_to_loopback():
    assert [loadtest.check_loopback(u) for u in ("http://127.0.0.1:8501/", "http://localhost:9",
                                                  "http://[::1]:8501", "http://127.8.0.1")] == [
        "http://127.0.0.1:8501", "http://localhost:9", "http://[::1]:8501", "http://127.8.0.1"]
    for bad in ("http://10.0.0.5:8501", "http://192.168.1.2", "https://example.org", "ftp://127.0.0.1",
                "127.0.0.1:8501"):
        with pytest.raises(BadInput):
            loadtest.check_loopback(bad)


def test_loadtest_view_pool_is_distinct_and_repeatable():
    pool = loadtest.view_pool(40, seed=3)
    assert len(pool) == len(set(pool)) == 40
    assert pool == loadtest.view_pool(40, seed=3)
    assert all(isinstance(f, Filters) for f in pool)
    rng = random.Random(1)
    picks = [loadtest.pick_view(pool, rng) for _ in range(2000)]
    # Zipf popularity: the first view is asked for far more often than the last
    assert picks.count(pool[0]) > 5 * picks.count(pool[-1])


def test_loadtest_run_load_counts_requests_and_errors_and_stops_on_time():
    calls = []
    lock = threading.Lock()

    def flaky(rng: random.Random) -> None:
        with lock:
            calls.append(1)
            n = len(calls)
        time.sleep(0.01)
        if n % 4 == 0:
            raise OSError("connection refused")

    started = time.monotonic()
    result = loadtest.run_load({"flaky": flaky}, users=5, seconds=1.5, think_s=0.05)
    took = time.monotonic() - started
    assert took < 3.5
    t = result["targets"]["flaky"]
    assert t["requests"] == len(calls) == result["requests"]
    assert t["errors"] == result["errors"] == len(calls) // 4
    assert t["error_samples"][0] == "OSError: connection refused"
    assert 0.009 < result["p50_s"] < 0.5 and result["p50_s"] <= result["p95_s"] <= t["max_s"]
    assert (result["users"], result["unfinished_users"]) == (5, 0)


def test_loadtest_run_load_refuses_unbounded_runs():
    for kwargs in ({"users": 0, "seconds": 1}, {"users": 1000, "seconds": 1}, {"users": 1, "seconds": 0},
                   {"users": 1, "seconds": 10_000}):
        with pytest.raises(BadInput):
            loadtest.run_load({"x": lambda rng: None}, **kwargs)


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = b"ok" if self.path in ("/_stcore/health", "/") else b"missing"
        self.send_response(200 if body == b"ok" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_loadtest_http_targets_fetch_health_and_page():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        result = loadtest.run_load(loadtest.http_requests(url), users=3, seconds=1.0, think_s=0.05)
        with pytest.raises(OSError):
            loadtest.http_get(url + "/nowhere")
    finally:
        server.shutdown()
        server.server_close()
    assert set(result["targets"]) == {"http_health", "http_page"}
    assert result["errors"] == 0 and result["targets"]["http_page"]["requests"] > 3


def test_loadtest_bench_load_command_reports_json(db, capsys):
    code = main(["bench", "load", "--users", "4", "--seconds", "3", "--views", "5", "--think-ms", "100", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert {"requests", "errors", "p50_s", "p95_s", "targets", "cache", "views"} <= out.keys()
    assert (out["errors"], out["views"], out["users"]) == (0, 5, 4)
    assert out["cache"]["computations"] <= 5 < out["requests"]


def test_loadtest_bench_load_command_refuses_other_hosts(capsys):
    assert main(["bench", "load", "--url", "http://10.1.2.3:8501", "--seconds", "1"]) == 2
    assert "only talks to this machine" in capsys.readouterr().err


# ---- the real server through Streamlit's WebSocket protocol ----------------------------------------
def test_loadtest_protocol_mode_refuses_bad_runs(capsys):
    from devtools import loadtest_ws

    with pytest.raises(BadInput, match="--pages must name some of Explore, Map, Trials"):
        loadtest_ws.run_visitors("http://127.0.0.1:9", users=1, seconds=1, pages=("Explore", "Nowhere"))
    with pytest.raises(BadInput, match="only talks to this machine"):
        loadtest_ws.run_visitors("http://192.0.2.1:8501", users=1, seconds=1)
    assert main(["bench", "load", "--protocol", "--seconds", "1"]) == 2
    assert "--protocol needs a server" in capsys.readouterr().err


@pytest.mark.slow
def test_loadtest_protocol_mode_renders_real_pages(db):
    from devtools import loadtest_ws
    from devtools.commands.bench_load_cmd import streamlit_server

    with streamlit_server() as url:
        tab = loadtest_ws.Visitor(url, timeout_s=120)
        try:
            tab.open_page("")
            assert {"Explore", "Map", "Trials"} <= set(tab.pages)
            first = tab.open_page("Explore")
            assert (first.problems, first.elements > 20) == ([], True)
            assert "flt_condition" in tab.widgets
            changed = tab.set_text("flt_condition", "diabetes")
            assert changed.problems == [] and changed.elements > 20
            # The same view again: the large elements the tab already holds come as references, so the
            # render is no larger. While the server warms up a render may draw charts the one before lacked.
            deadline = time.monotonic() + 240
            before = tab.open_page("Explore")
            again = tab.open_page("Explore")
            while again.bytes != before.bytes and time.monotonic() < deadline:
                before, again = again, tab.open_page("Explore")
            assert again.problems == [] and again.references >= 1 and again.bytes <= before.bytes
        finally:
            tab.close()
        result = loadtest_ws.run_visitors(url, users=2, seconds=8, pages=("Explore", "Map"), think_s=0.2)
    assert result["errors"] == 0 and result["renders"] >= 2
    assert result["p95_s"] >= result["p50_s"] > 0 and result["renders_per_s"] > 0
    assert set(result["targets"]) <= {"Explore:open", "Explore:filter", "Map:open", "Map:filter"}


@pytest.mark.slow
def test_loadtest_protocol_mode_compares_checkouts_in_one_run(db, capsys):
    from devtools.commands.bench_load_cmd import PROJECT_DIR

    # The same checkout twice stands in for "before" and "after": two servers, one after the other.
    code = main(["bench", "load", "--protocol", "--serve", "--app-dir", str(PROJECT_DIR), "--app-dir",
                 str(PROJECT_DIR), "--users", "1", "--seconds", "4", "--think-ms", "200", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["errors"] == 0 and len(result["runs"]) == 2
    for run in result["runs"]:
        assert run["renders"] >= 1 and run["warm_up_s"] > 0 and run["app"].startswith(PROJECT_DIR.name)
        assert run["server_cpu_s"] > 0 and run["cpu_s_per_render"] > 0 and " / " in run["load_average"]


def test_loadtest_protocol_comparison_options_and_table(capsys, tmp_path):
    import os
    import tomllib
    from pathlib import Path

    from devtools.commands import bench_load_cmd as cmd

    assert main(["bench", "load", "--protocol", "--url", "http://127.0.0.1:9", "--app-dir", "."]) == 2
    assert "--app-dir goes with --serve" in capsys.readouterr().err
    assert main(["bench", "load", "--protocol", "--serve", "--pid", "1"]) == 2
    assert "--pid goes with --url" in capsys.readouterr().err
    with pytest.raises(BadInput, match="holds no app.py"), cmd.served_app(tmp_path):
        pass
    # CPU seconds of a process from /proc: this one's grow while it computes.
    before = cmd.cpu_seconds(os.getpid())
    sum(i * i for i in range(2_000_000))
    assert before is not None and cmd.cpu_seconds(os.getpid()) > before
    assert cmd.cpu_seconds(2**22 + 12345) is None  # no such process
    assert cmd._app_label(cmd.PROJECT_DIR).startswith(cmd.PROJECT_DIR.name + "@")
    run = {"users": 2, "pages": ["Explore"], "seconds": 10.0, "think_s": 1.0, "renders": 8, "renders_per_s": 0.8,
           "errors": 0, "p50_s": 0.1, "p95_s": 0.4, "max_s": 0.5, "mb_received": 1.0, "targets": {},
           "load_average": "1.0 / 1.2", "server_cpu_s": 0.8, "cpu_s_per_render": 0.1}
    text = cmd._protocol_text({"runs": [{**run, "app": "old@abc"}, {**run, "app": "new@def+", "p95_s": 0.2}],
                               "errors": 0})
    table = text.rsplit("\n\n", 1)[1].splitlines()
    assert table[0].split()[:4] == ["app", "renders", "per", "s"]
    assert table[1].split() == ["old@abc", "8", "0.8", "0.1", "0.4", "0.5", "0", "0.1", "1.0", "/", "1.2"]
    assert table[2].split()[0:5] == ["new@def+", "8", "0.8", "0.1", "0.2"]
    # The served app renders without Streamlit's forced full GC and without its per-session source watcher.
    config = tomllib.loads((Path(cmd.PROJECT_DIR) / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["postScriptGC"] is False and config["server"]["fileWatcherType"] == "none"
