"""The embedded server survives a kill -9 of its owner and is re-attached by the next process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent

START_AND_WAIT = """
import sys, time
from pathlib import Path
from services.data import embedded
from services.data.db import Database
uri = embedded.start(Path(sys.argv[1]))
db = Database(uri)
db.execute("CREATE TABLE IF NOT EXISTS marker (v int)")
db.execute("INSERT INTO marker VALUES (7)")
print(uri, flush=True)
time.sleep(120)
"""

START_AND_READ = """
import sys
from pathlib import Path
from services.data import embedded
from services.data.db import Database
uri = embedded.start(Path(sys.argv[1]))
db = Database(uri)
for _ in range(50):
    try:
        print(db.fetch_value("SELECT sum(v) FROM marker"), flush=True)
        break
    except Exception:
        import time; time.sleep(0.2)
db.close()
"""

pytestmark = pytest.mark.skipif(bool(os.environ.get("TEST_DATABASE_URL")),
                                reason="exercises the embedded server only")


def test_embedded_restart_after_kill_9(scratch_dir):
    pgdata = scratch_dir / "pg"
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    owner = subprocess.Popen([sys.executable, "-c", START_AND_WAIT, str(pgdata)], cwd=PROJECT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = owner.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("postgresql://"), owner.stderr.read()  # type: ignore[union-attr]
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        handles = json.loads((pgdata / ".handle_pids.json").read_text())
        assert owner.pid in handles  # the killed owner left its PID behind
        second = subprocess.run([sys.executable, "-c", START_AND_READ, str(pgdata)], cwd=PROJECT, env=env,
                                capture_output=True, text=True, timeout=120)
        assert second.stdout.strip().splitlines()[-1] == "7", second.stderr
        # the second process dropped the dead PID and, being the last handle, stopped the server at exit
        assert owner.pid not in json.loads((pgdata / ".handle_pids.json").read_text())
        deadline = time.monotonic() + 30  # the postmaster removes its pid file as the last step of stopping
        while (pgdata / "postmaster.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not (pgdata / "postmaster.pid").exists()
    finally:
        if owner.poll() is None:
            owner.kill()


def test_embedded_a_second_start_keeps_this_process_handle(scratch_dir):
    """A process that starts (attaches) twice — a page's recovery, `db reset` — still counts as a handle: another
    process that attaches and leaves afterwards (a CLI command, a second server) must not stop the server under it."""
    from services.data import embedded
    from services.data.db import Database

    pgdata = scratch_dir / "pg"
    uri = embedded.start(pgdata)
    assert embedded.start(pgdata) == uri
    assert os.getpid() in json.loads((pgdata / ".handle_pids.json").read_text())
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    db = Database(uri)
    try:
        db.execute("CREATE TABLE IF NOT EXISTS marker (v int)")
        db.execute("INSERT INTO marker VALUES (5)")
        other = subprocess.run([sys.executable, "-c", START_AND_READ, str(pgdata)], cwd=PROJECT, env=env,
                               capture_output=True, text=True, timeout=120)
        assert other.stdout.strip().splitlines()[-1] == "5", other.stderr
        assert other.returncode == 0, other.stderr
        assert (pgdata / "postmaster.pid").exists()  # the leaving process was not the last handle
        assert db.fetch_value("SELECT sum(v) FROM marker") == 5
    finally:
        db.close()
        embedded.wipe(pgdata)
