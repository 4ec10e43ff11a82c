"""Readiness of this app process for a load balancer: the trial database answers, asked on a connection of its
own outside the pages' pool (a busy pool is not a database that is down)."""

from __future__ import annotations

import concurrent.futures
from typing import Any

from services.data import runtime
from services.errors import TrialLandscapeError

READY_TIMEOUT_S = 5.0
_pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="readiness")


def check(timeout_s: float = READY_TIMEOUT_S) -> dict[str, Any]:
    """{"ready": bool, "database": label, "latency_ms": …, "error": …}: ready when the database answers a query
    within timeout_s. A process still starting its database is not ready (it answers once the start is done)."""
    future = _pool.submit(_ping)  # the executor's submit is thread-safe
    try:
        return future.result(timeout=timeout_s)
    except concurrent.futures.TimeoutError:
        return {"ready": False, "error": f"the database did not answer within {timeout_s:g} s"}


def _ping() -> dict[str, Any]:
    try:
        db = runtime.get_db()
    except TrialLandscapeError as err:
        return {"ready": False, "error": str(err)}
    health = db.health()
    out: dict[str, Any] = {"ready": health.ok, "database": health.database,
                           "latency_ms": round(health.latency_ms, 1)}
    if not health.ok:
        out["error"] = health.error
    return out
