"""`bench views`: cold p50 of each researcher view (comparison, timeline, feasibility, planning benchmarks, …)
for the representative filters, on the sample or at registry scale.

Each view is one entry in `VIEWS`: a name and a function of (filters, database, engine) that computes what its
page shows, without any result cache. Add a view by adding its function here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from devtools.bench import DASHBOARD_FILTERS, parse_query, summarize, time_calls
from services.dashboard.filters import Filters
from services.errors import BadInput

VIEWS_TARGET_S = 1.0  # the p50 each view must stay under for every representative filter at 575,000 studies


def _dashboard(f: Filters, db: Any, eng: Any) -> Any:
    """Explore's dashboard: the reference every other view is compared with."""
    from services.dashboard import stats

    return stats.dashboard(f, db=db, engine=eng)


def _relevance(f: Filters, db: Any, eng: Any) -> Any:
    """The Trials table's first page sorted by relevance (with no condition text it falls back to start date)."""
    from services.dashboard import search

    return search.matching_trials(f, sort="relevance", descending=True, limit=50, db=db, engine=eng)


COMPARE_B = "status=ANY"  # the comparison's fixed filter set B: the "none" filter (every study)


def _compare(f: Filters, db: Any, eng: Any) -> Any:
    """Compare page: A = the representative filter, B = every study; both dashboards at once, then the rows."""
    from services.dashboard import compare, stats

    return compare.compare(f, parse_query(COMPARE_B), lambda x: stats.dashboard(x, db=db, engine=eng))


def _bench_view(f: Filters, db: Any) -> Any:
    """The saved view "bench: <query>" of these filters (saved on first use, so its baseline is that import)."""
    from services.dashboard import savedviews

    name = f"bench: {f.query_string()}"[:savedviews.MAX_NAME]
    found = next((v for v in savedviews.list_views(db) if v.name == name), None)
    return found or savedviews.save_view(db, name, f)


def _saved_view_changes(f: Filters, db: Any, eng: Any) -> Any:
    """A saved view's change report from its baseline to the latest snapshot (what its sidebar line and `watch`
    compute). Run once to save the views, import (or `bench snapshot` after changing data), run again."""
    from services.dashboard import savedviews

    return savedviews.change_report(db, _bench_view(f, db))


def _saved_view_open(f: Filters, db: Any, eng: Any) -> Any:
    """Opening a saved view: its baseline moves to the latest snapshot with the NCT ids matching it now."""
    from services.dashboard import savedviews

    return savedviews.mark_opened(db, _bench_view(f, db))


def _timeline(f: Filters, db: Any, eng: Any) -> Any:
    """The Timeline page's aggregated timeline (trials active per quarter by phase), whatever the count."""
    from services.dashboard import timeline

    return timeline.timeline(f, db=db, engine=eng, bar_limit=0)


def _planning(f: Filters, db: Any, eng: Any) -> Any:
    """The Timeline page's planning benchmarks (table, stop reasons, what was left out)."""
    from services.dashboard import planning

    return planning.benchmarks(f, db=db, engine=eng)


def _feasibility(f: Filters, db: Any, eng: Any) -> Any:
    """The Sites page: the facility groups with the most matching trials, their details and names."""
    from services.dashboard import feasibility

    return feasibility.site_table(f, db=db, engine=eng)


VIEWS: dict[str, Callable[[Filters, Any, Any], Any]] = {
    "dashboard": _dashboard,
    "compare": _compare,
    "saved_view_changes": _saved_view_changes,
    "saved_view_open": _saved_view_open,
    "timeline": _timeline,
    "planning": _planning,
    "relevance": _relevance,
    "feasibility": _feasibility,
}


def check_names(names: Sequence[str] | None) -> None:
    """Refuse view names that are not in VIEWS, naming the known ones."""
    unknown = [n for n in names or () if n not in VIEWS]
    if unknown:
        raise BadInput(f"unknown view(s): {', '.join(unknown)}; known: {', '.join(VIEWS)}")


def bench_views(db: Any, *, runs: int = 5, names: Sequence[str] | None = None, engine_name: str = "auto",
                filters: Sequence[tuple[str, str]] = DASHBOARD_FILTERS,
                target_s: float = VIEWS_TARGET_S) -> dict[str, Any]:
    """Time each named view (all when None) for each representative filter; p50 over `runs` cold calls."""
    from services.dashboard import engine
    from services.data import geo

    eng = engine.by_name(db, engine_name)
    geo.warm_up()  # built once per process: start-up, not view time
    db.health()
    eng.count(parse_query("status=ANY"))  # the in-process store's load is start-up, not view time
    check_names(names)
    rows: list[dict[str, Any]] = []
    for view in names or list(VIEWS):
        fn = VIEWS[view]
        for label, query in filters:
            f = parse_query(query)

            def call(f: Filters = f, fn: Callable[[Filters, Any, Any], Any] = fn) -> Any:
                return fn(f, db, eng)

            try:
                times, _ = time_calls(call, runs)
            except Exception as err:  # noqa: BLE001 - a failing view is reported and the others still timed
                rows.append({"view": view, "filter": label, "query": query, "error": f"{type(err).__name__}: {err}"})
                continue
            rows.append({"view": view, "filter": label, "query": query, **summarize(times)})
    timed = [r for r in rows if "p50_s" in r]
    worst = max((r["p50_s"] for r in timed), default=0.0)
    return {"benchmark": "views", "database": db.label, "engine": eng.kind, "runs": runs, "target_p50_s": target_s,
            "worst_p50_s": worst, "ok": worst <= target_s and len(timed) == len(rows), "rows": rows}


def views_table(result: dict[str, Any]) -> str:
    """The result as a text table, one line per view and filter."""
    lines = [f"views benchmark on {result['database']} ({result['engine']} engine): p50 over {result['runs']} "
             f"cold runs (target ≤ {result['target_p50_s']:.2f} s)",
             f"{'view':<20}{'filter':<26}{'p50 s':>9}{'p90 s':>9}{'max s':>9}"]
    for r in result["rows"]:
        if "error" in r:
            lines.append(f"{r['view']:<20}{r['filter']:<26}  ERROR {r['error']}")
        else:
            lines.append(f"{r['view']:<20}{r['filter']:<26}{r['p50_s']:>9.3f}{r['p90_s']:>9.3f}{r['max_s']:>9.3f}")
    lines.append(f"worst p50: {result['worst_p50_s']:.3f} s — {'OK' if result['ok'] else 'OVER TARGET'}")
    return "\n".join(lines)
