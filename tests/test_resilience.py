"""Resilience: the database stops under a running page session and comes back; the page recovers in-process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent


def _snapshot(at) -> dict:  # noqa: ANN001 - streamlit AppTest
    return {
        "exceptions": [e.value for e in at.exception],
        "errors": [e.value.split("** (since")[0] for e in at.error],
        "buttons": [b.label for b in at.main.button],
        "metrics": {m.label: m.value for m in at.metric},
    }


def child_main(data_dir: str) -> None:
    """Runs in a fresh interpreter: own embedded server, an AppTest session, stop, restart."""
    from streamlit.testing.v1 import AppTest

    from services.data import runtime
    from services.ui import state as ui_state
    from tests import scratch_server

    path = Path(data_dir)
    scratch_server.prepare(path, studies=60)
    out: dict[str, object] = {}
    at = AppTest.from_file(str(PROJECT / "app_pages" / "data.py"), default_timeout=120).run()
    out["before"] = _snapshot(at)

    scratch_server.stop_server(path)
    out["health_down"] = runtime.get_db().health().ok
    ui_state.clear_cache()  # a view nobody has cached yet: the page must query the stopped server
    at.run()
    out["down"] = _snapshot(at)
    at.run()  # still down on the next interaction: same banner, no traceback
    out["still_down"] = _snapshot(at)

    scratch_server.start_server(path)
    out["health_back"] = runtime.get_db().health().ok
    at.button(key="db_retry").click().run()
    out["after_retry"] = _snapshot(at)
    ui_state.clear_cache()
    at.run()  # fresh queries on the same pool: dead connections were replaced (pre-ping)
    out["fresh_queries"] = _snapshot(at)
    runtime.reset()
    scratch_server.release(path)
    print("RESULT " + json.dumps(out))


@pytest.mark.slow
def test_resilience_database_stop_and_restart_under_a_running_session(scratch_dir):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "APP_PASSWORD")}
    env["TRIAL_LANDSCAPE_DATA_DIR"] = str(scratch_dir)
    proc = subprocess.run(
        [sys.executable, "-c", f"from tests.test_resilience import child_main; child_main({str(scratch_dir)!r})"],
        cwd=PROJECT, env=env, capture_output=True, text=True, timeout=300,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    out = json.loads(lines[-1][len("RESULT "):])

    before = out["before"]
    assert before["exceptions"] == [] and before["errors"] == []
    assert before["metrics"]["Studies"] == "60"
    down = {"exceptions": [], "errors": ["**The database is not reachable right now"], "buttons": ["Retry"],
            "metrics": {}}
    assert (out["health_down"], out["down"], out["still_down"]) == (False, down, down)
    assert out["health_back"] is True
    assert out["after_retry"] == before
    assert out["fresh_queries"] == before
