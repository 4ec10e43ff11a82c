"""A pytest run leaves no folder under .data/ and no PostgreSQL behind: complete, failing fixture, Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import session_cleanup

PROJECT = Path(__file__).resolve().parent.parent
DATA_ROOT = PROJECT / ".data"
CHILD = "tests/cleanup_child_tests.py"
pytestmark = pytest.mark.slow


def _child_env(**extra: str) -> dict[str, str]:
    # A fresh run of its own: none of this run's folder or database settings.
    env = {k: v for k, v in os.environ.items()
           if k not in ("TRIAL_LANDSCAPE_DATA_DIR", "TRIAL_LANDSCAPE_TEST_SESSION_DIR", "PYTEST_XDIST_WORKER",
                        "PYTEST_XDIST_TESTRUNUID", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_CURRENT_TEST")}
    env["TRIAL_LANDSCAPE_TEST_NO_SAMPLE"] = "1"
    env.update(extra)
    return env


def _ctrl_c_reaches() -> None:
    """In the child, before it starts: SIGINT acts as Ctrl-C in a terminal. A run started in the background by a
    non-interactive shell (a CI script's `cmd &`) ignores SIGINT, every process it starts inherits that, and
    Python then keeps ignoring it — the child would never hear the interrupt this test sends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _folders() -> set[str]:
    return {p.name for p in DATA_ROOT.iterdir()} if DATA_ROOT.is_dir() else set()


def _git_ignored_under_data() -> set[str]:
    out = subprocess.run(["git", "status", "--ignored", "--porcelain", "--untracked-files=all", ".data/"],
                         cwd=PROJECT, capture_output=True, text=True, check=True).stdout
    names = set()
    for line in out.splitlines():
        path = line[3:].strip().rstrip("/")
        parts = Path(path).parts
        if parts and parts[0] == ".data":
            names.add(parts[1] if len(parts) > 1 else "")
    return names


def _postgres_under(names: set[str]) -> list[int]:
    return [pid for name in names for pid in session_cleanup.postmaster_pids(DATA_ROOT / name)]


def _new_run_folders(before: set[str]) -> set[str]:
    return {n for n in _folders() - before if n.startswith("test-")}


def _run_folder_postgres_anywhere(before_pids: set[int]) -> list[int]:
    """Live postgres processes started from a folder of a run that is not this one's."""
    mine = os.environ.get("TRIAL_LANDSCAPE_TEST_SESSION_DIR", "")
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) in before_pids:
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmd and cmd[0].endswith(b"/postgres") and any(str(DATA_ROOT).encode() + b"/test-" in c for c in cmd):
            if not mine or not any(mine.encode() in c for c in cmd):
                found.append(int(proc.name))
    return found


def _pids_now() -> set[int]:
    return {int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()}


@pytest.mark.parametrize("workers", ["0", "2"])
def test_session_cleanup_after_a_complete_run_with_a_failing_fixture(workers):
    before, before_git, before_pids = _folders(), _git_ignored_under_data(), _pids_now()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", workers, CHILD],
                          cwd=PROJECT, env=_child_env(), capture_output=True, text=True, timeout=900)
    assert "1 failed" in done.stdout or "1 error" in done.stdout, done.stdout[-3000:]
    assert "2 passed" in done.stdout, done.stdout[-3000:]
    assert _new_run_folders(before) == set()
    assert _git_ignored_under_data() - before_git == set()
    assert _run_folder_postgres_anywhere(before_pids) == []


@pytest.mark.parametrize("workers", ["0", "2"])
def test_session_cleanup_after_sigint_midway(workers, tmp_path):
    before, before_git, before_pids = _folders(), _git_ignored_under_data(), _pids_now()
    ready = tmp_path / "ready"
    child = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", workers, CHILD,
                              "-k", "interrupted"], cwd=PROJECT, env=_child_env(CLEANUP_READY_FILE=str(ready)),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=_ctrl_c_reaches)
    try:
        deadline = time.monotonic() + 600
        while not ready.exists():
            assert child.poll() is None, child.stdout.read() if child.stdout else ""
            assert time.monotonic() < deadline
            time.sleep(0.2)
        running = _new_run_folders(before)
        assert len(running) == 1 and _postgres_under(running), (running, _folders())
        child.send_signal(signal.SIGINT)  # as Ctrl-C would (to the pytest process)
        out, _ = child.communicate(timeout=300)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert "KeyboardInterrupt" in out or "Interrupted" in out, out[-3000:]
    assert _new_run_folders(before) == set()
    assert _git_ignored_under_data() - before_git == set()
    assert _postgres_under(running) == [] and _run_folder_postgres_anywhere(before_pids) == []
