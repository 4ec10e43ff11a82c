"""Benchmark helpers: the dashboard's representative filters, a timer and summary statistics.

`time_calls` and `summarize` know nothing about the app; `bench_dashboard` times `stats.dashboard`
(no result cache, so every call is cold) for each filter of a list, and is reused at registry scale.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import parse_qs

from services.dashboard.filters import Filters

# The representative filters (name, share-link query). "none" means no filter at all, not even the
# default open-status one; the others keep the default status unless they set their own.
DASHBOARD_FILTERS: tuple[tuple[str, str], ...] = (
    ("none", "status=ANY"),
    ("common condition", "condition=diabetes"),
    ("rare condition", "condition=ewing%20sarcoma&status=ANY"),
    ("recruiting + phase 2", "status=RECRUITING&phase=PHASE2"),
    ("near Boston, MA 100 mi", "near=Boston%2C%20MA&radius=100"),
    ("age 62 + male", "age=62&sex=MALE"),
    ("one country", "country=Japan"),
    ("industry-funded", "funder=INDUSTRY"),
    ("start 2015–2020", "start_from=2015&start_to=2020&status=ANY"),
)
DASHBOARD_TARGET_S = 1.0  # the p50 every filter must stay under on the sample


def parse_query(query: str) -> Filters:
    """A share-link query → Filters; raises ValueError if any part of it is not understood."""
    f, notices = Filters.from_query(parse_qs(query.lstrip("?"), keep_blank_values=True))
    if notices:
        raise ValueError(f"benchmark filter {query!r} is not clean: {' '.join(notices)}")
    return f


def time_calls(fn: Callable[[], Any], runs: int) -> tuple[list[float], Any]:
    """Call fn `runs` times; return each call's wall time in seconds and the last result."""
    if runs < 1:
        raise ValueError("runs must be at least 1")
    times: list[float] = []
    result: Any = None
    for _ in range(runs):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return times, result


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100) of a non-empty sequence."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError("q must be between 0 and 100")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def summarize(times: Sequence[float]) -> dict[str, float | int]:
    """Runs, p50, p90, min, max and mean of timings, in seconds rounded to 0.1 ms."""
    return {"runs": len(times), "p50_s": round(percentile(times, 50), 4), "p90_s": round(percentile(times, 90), 4),
            "min_s": round(min(times), 4), "max_s": round(max(times), 4),
            "mean_s": round(sum(times) / len(times), 4)}


def bench_dashboard(*, runs: int = 5, filters: Sequence[tuple[str, str]] = DASHBOARD_FILTERS,
                    db: Any = None, engine_name: str = "auto", target_s: float = DASHBOARD_TARGET_S) -> dict[str, Any]:
    """Time stats.dashboard (cold: no result cache) for each filter; p50 over `runs` calls each."""
    from services.dashboard import engine, stats
    from services.data import geo, runtime

    db = db or runtime.get_db()
    eng = engine.by_name(db, engine_name)
    geo.warm_up()  # the gazetteer is built once per process; that is start-up, not dashboard time
    db.health()  # open the pool before the clock starts
    rows: list[dict[str, Any]] = []
    for name, query in filters:
        f = parse_query(query)

        def call(f: Filters = f) -> stats.Dashboard:
            return stats.dashboard(f, db=db, engine=eng)

        times, last = time_calls(call, runs)
        rows.append({"name": name, "query": query, **summarize(times),
                     "matching_trials": last.kpis.get("matching_trials"), "mode": last.mode,
                     "errors": last.errors})
    worst = max(r["p50_s"] for r in rows) if rows else 0.0
    return {"benchmark": "dashboard", "database": db.label, "runs": runs, "target_p50_s": target_s,
            "worst_p50_s": worst, "ok": worst <= target_s and not any(r["errors"] for r in rows),
            "filters": rows}


def dashboard_table(result: dict[str, Any]) -> str:
    """The benchmark result as a text table."""
    lines = [f"dashboard benchmark on {result['database']}: p50 over {result['runs']} cold runs per filter "
             f"(target ≤ {result['target_p50_s']:.2f} s)",
             f"{'filter':<26}{'trials':>8}{'p50 s':>9}{'p90 s':>9}{'min s':>9}{'max s':>9}  engine"]
    for r in result["filters"]:
        trials = "-" if r["matching_trials"] is None else f"{r['matching_trials']:,}"
        flag = "  errors: " + ", ".join(sorted(r["errors"])) if r["errors"] else ""
        lines.append(f"{r['name']:<26}{trials:>8}{r['p50_s']:>9.3f}{r['p90_s']:>9.3f}{r['min_s']:>9.3f}"
                     f"{r['max_s']:>9.3f}  {r['mode']}{flag}")
    lines.append(f"worst p50: {result['worst_p50_s']:.3f} s — {'OK' if result['ok'] else 'OVER TARGET'}")
    return "\n".join(lines)
