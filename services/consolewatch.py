"""Memory watchdog of the SQL console: how much memory a query's server process holds, and a cap on it.

PostgreSQL has no per-query memory limit: work_mem bounds each sort and hash, but an aggregate such as
`jsonb_agg(s) FROM ctgov.studies s, generate_series(1, 50)` keeps growing (6.25 GB in 30 s on the full AACT).
Where the database server runs on this machine — the embedded server, or an external one on localhost — each
console query's server process is measured from /proc while it runs (services/data/db.py calls the cap every
0.1 s) and its query is cancelled past the cap. A remote server's processes cannot be measured: PostgreSQL shows a
process's memory contexts only to that process itself (pg_backend_memory_contexts) or to the server log
(pg_log_backend_memory_contexts), so there the cap is not enforced and the console says so.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
# Process start (from /proc) and the server's backend_start differ by the fork's few milliseconds; /proc/stat's
# boot time is whole seconds.
START_TOLERANCE_S = 2.0
# Memory the query makes for itself: private pages in memory or swapped out. Shared buffers (RssShmem) and the
# server's program (RssFile) are shared by every process and left out, so reading a large table is not counted.
_PRIVATE_FIELDS = ("RssAnon:", "VmSwap:")


def is_local(pid: int, backend_start: dt.datetime | None) -> bool:
    """Whether server process `pid`, started at `backend_start` (pg_stat_activity), is a process on this machine.

    The start time must match: a server in a container or on another host has its own process numbers, and the
    same number here may belong to any other process.
    """
    if backend_start is None:
        return False
    try:
        after_name = (PROC / str(pid) / "stat").read_text().rsplit(") ", 1)[1].split()
        boot = next(int(line.split()[1]) for line in (PROC / "stat").read_text().splitlines()
                    if line.startswith("btime "))
        started = boot + int(after_name[19]) / os.sysconf("SC_CLK_TCK")  # field 22, starttime, in clock ticks
    except (OSError, IndexError, ValueError, StopIteration):
        return False
    return abs(started - backend_start.timestamp()) <= START_TOLERANCE_S


def private_bytes(pid: int) -> int | None:
    """Private memory of process `pid` in bytes (resident and swapped), or None when it cannot be read."""
    try:
        lines = (PROC / str(pid) / "status").read_text().splitlines()
    except OSError:
        return None
    found = [int(line.split()[1]) * 1024 for line in lines if line.startswith(_PRIVATE_FIELDS)]
    return sum(found) if found else None


@dataclass
class MemoryCap:
    """A console query's memory cap: called with its server process's id while it runs (db.fetch_guarded's
    `watch`), True once the process holds more than `cap_bytes` of private memory, which cancels the query."""

    cap_bytes: int
    peak_bytes: int = 0
    stopped: bool = False

    def __call__(self, pid: int) -> bool:
        used = private_bytes(pid)
        if used is not None:
            self.peak_bytes = max(self.peak_bytes, used)
            self.stopped = self.stopped or used > self.cap_bytes
        return self.stopped
