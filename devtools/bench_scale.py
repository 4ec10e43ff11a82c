"""Registry-scale dashboard benchmark: our path against the straightforward one, in one process.

"Ours" is the app's path: the engine of the database (in-process when the derived tables are built),
then the cross-user cache for warm calls. "Straightforward" is the SQL engine run naively: one query
per chart, one after another, on the ctgov base tables with COUNT(DISTINCT …), no cache. Both compute the full
dashboard (KPIs, funnel, every facet) plus the map's points; the benchmark checks they agree.
"""

from __future__ import annotations

import functools
import os
import resource
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from devtools.bench import DASHBOARD_FILTERS, parse_query, percentile, time_calls
from services.dashboard import engine, facetstore, search, sitemap, stats
from services.dashboard.filters import Filters
from services.data import geo
from services.data.db import Database
from services.errors import TrialLandscapeError


def _comparable(d: stats.Dashboard, m: sitemap.MapData) -> dict[str, Any]:
    return {"kpis": d.kpis, "funnel": d.funnel, "facets": d.facets,
            "map": {"sites": m.summary.sites, "located": m.summary.located, "shown": m.summary.shown,
                    "points": m.points.to_dict("records")[:50],
                    "countries": m.countries.to_dict("records"), "states": m.states.to_dict("records")}}


def ours(f: Filters, db: Database) -> tuple[stats.Dashboard, sitemap.MapData]:
    """The app's path, no result cache (cold): the database's engine."""
    return stats.dashboard(f, db=db, timeout_ms=60_000), sitemap.map_data(f, db=db)


NAIVE_TIMEOUT_MS = 3_600_000  # per query: at registry scale a single straightforward chart can take ten minutes


def straightforward(f: Filters, db: Database) -> tuple[stats.Dashboard, sitemap.MapData]:
    """One query per chart, sequential, base tables only (the SQL engine, asked explicitly)."""
    naive = engine.SqlEngine(db, reason="setting")
    return (stats.dashboard(f, db=db, timeout_ms=NAIVE_TIMEOUT_MS, engine=naive, sequential=True),
            sitemap.map_data(f, db=db, timeout_ms=NAIVE_TIMEOUT_MS, engine=naive))


@dataclass
class FilterResult:
    """Numbers for one filter."""

    name: str
    query: str
    ours_p50_s: float
    ours_p95_s: float
    warm_p50_s: float
    warm_p95_s: float
    naive_p50_s: float
    naive_p95_s: float
    ratio: float
    agree: bool
    matching_trials: int

    def as_dict(self) -> dict[str, Any]:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def run(db: Database, *, runs: int = 5, naive_runs: int | None = None,
        filters: Sequence[tuple[str, str]] = DASHBOARD_FILTERS) -> dict[str, Any]:
    """Time every filter both ways; return the table, the median ratio, agreement and peak memory."""
    engine.forget(db)
    geo.warm_up()  # built once per process: start-up cost, not dashboard time
    db.health()
    mode = engine.engine_for(db).kind
    load_s = None
    if mode == "memory":  # the in-process engine loads once per process: start-up, like the gazetteer
        load_s = round(facetstore.store_for(db).load_seconds, 1)
    studies = int(db.fetch_value("SELECT count(*) FROM ctgov.studies"))
    rows = []
    for name, query in filters:
        f = parse_query(query)
        ours_times, (od, om) = time_calls(functools.partial(ours, f, db), runs)
        warm_times, _ = time_calls(functools.partial(stats.cached_dashboard, f, db=db), runs + 1)
        naive_times, (nd, nm) = time_calls(functools.partial(straightforward, f, db), naive_runs or runs)
        p50 = statistics.median(ours_times)
        n50 = statistics.median(naive_times)
        rows.append(FilterResult(
            name, query, p50, percentile(ours_times, 95), statistics.median(warm_times[1:]),
            percentile(warm_times[1:], 95), n50,
            percentile(naive_times, 95), n50 / p50 if p50 else 0.0,
            _comparable(od, om) == _comparable(nd, nm) and not od.errors and not nd.errors,
            int(od.kpis.get("matching_trials", 0))))
    ratios = [r.ratio for r in rows]
    path_rows = paths(db, runs=runs)
    return {
        "studies": studies,
        "database": db.label,
        "mode": mode,
        "runs": runs,
        "naive_runs": naive_runs or runs,
        "filters": [r.as_dict() for r in rows],
        "median_ratio": round(statistics.median(ratios), 2) if ratios else 0.0,
        "all_agree": all(r.agree for r in rows) and all(r["agree"] for r in path_rows),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "cpu_count": os.cpu_count(),
        "store_load_s": load_s,
        "paths": path_rows,
    }


PAGE_ROWS = 50  # the Trials table's page size
DEEP_PAGES = (100, 500)  # pages timed deep in the list (page 500 needs 25,000 matches: registry scale)
NEAR_QUERY = "near=Boston%2C%20MA&radius=100&status=ANY"  # the distance sort needs a place


def paths(db: Database, *, runs: int = 5, deep_pages: Sequence[int] = DEEP_PAGES,
          sql_side: bool = True) -> list[dict[str, Any]]:
    """Trials count, its first and deep pages under each sort, a trial page, the CSV and JSON export of the
    recruiting trials, the world map and the assistant's search and stats tools: p50 on the database's engine and,
    for what takes an engine, on the SQL engine in the same run (unless `sql_side` is off), with agreement."""
    from services.assistant.backend import DatabaseBackend
    from services.dashboard import export
    from services.trials import DEFAULT_STATUSES

    mine, sql = engine.engine_for(db), engine.SqlEngine(db, reason="setting")
    everything = parse_query("status=ANY")
    recruiting = parse_query("status=RECRUITING")
    near = parse_query(NEAR_QUERY)
    backend = DatabaseBackend(db)

    def exported(e: Any, fmt: str) -> tuple[int, int]:
        rows = search.matching_trials(recruiting, limit=search.EXPORT_CAP, db=db, engine=e)
        return len(rows), len(export.to_bytes(rows, fmt))

    first_id = str(db.fetch_value("SELECT min(nct_id) FROM ctgov.studies") or "NCT00000000")
    # (name, call taking an engine, whether the call goes through the engine it is given)
    cases: list[tuple[str, Any, bool]] = [
        ("count (every trial)", lambda e: search.count_trials(everything, db=db, engine=e), True),
        ("export recruiting CSV", lambda e: exported(e, "csv"), True),
        ("export recruiting JSON", lambda e: exported(e, "json"), True),
        ("world map (sites)", lambda e: sitemap.map_data(everything, engine=e).summary.sites, True),
        ("trial detail", lambda e: bool(search.trial_detail(first_id, db=db)), False),
        ("assistant search_trials", lambda e: backend.search_trials(Filters(status=("RECRUITING",)))["total"],
         False),
        ("assistant search near", lambda e: backend.search_trials(
            Filters.at(42.3601, -71.0589, status=(), radius=100))["total"], False),
        ("assistant dashboard_stats",
         lambda e: backend.get_dashboard_stats(Filters(status=DEFAULT_STATUSES))["matching_trials"], False),
    ]
    for sort in engine.SORTS:
        f = near if sort == "nearest_miles" else everything
        for page in (1, *deep_pages):
            cases.append((f"page {page} by {sort}", functools.partial(
                lambda e, f, sort, page: search.matching_trials(f, sort=sort, limit=PAGE_ROWS,
                                                                offset=(page - 1) * PAGE_ROWS, db=db, engine=e)[
                    "nct_id"].tolist(), f=f, sort=sort, page=page), True))
    out = []
    for name, call, through_engine in cases:
        row: dict[str, Any] = {"path": name, "engine_p50_s": None, "sql_p50_s": None, "ratio": None, "agree": True}
        try:  # a path that times out is reported as such; the other paths are still timed
            mine_times, mine_result = time_calls(functools.partial(call, mine), runs)
        except TrialLandscapeError as err:
            row.update({"agree": False, "error": f"engine: {err}"})
            out.append(row)
            continue
        a = statistics.median(mine_times)
        row["engine_p50_s"] = round(a, 6)  # an in-memory count takes tens of microseconds
        if through_engine and sql_side:
            try:
                sql_times, sql_result = time_calls(functools.partial(call, sql), runs)
            except TrialLandscapeError as err:
                row["error"] = f"sql: {err}"  # the SQL side's time limit: no comparison, not a disagreement
            else:
                b = statistics.median(sql_times)
                row.update({"sql_p50_s": round(b, 6), "ratio": round(b / a, 2) if a else 0.0,
                            "agree": mine_result == sql_result})
        out.append(row)
    return out


def run_paths(db: Database, *, runs: int = 5, sql_side: bool = True) -> dict[str, Any]:
    """Only the paths (no dashboard filters, no straightforward baseline): the Trials table, exports, map, trial
    page and assistant tools, on the database's engine and (with `sql_side`) the SQL engine."""
    engine.forget(db)
    geo.warm_up()
    mode = engine.engine_for(db).kind
    load_s = round(facetstore.store_for(db).load_seconds, 2) if mode == "memory" else None
    rows = paths(db, runs=runs, sql_side=sql_side)
    return {"studies": int(db.fetch_value("SELECT count(*) FROM ctgov.studies")), "database": db.label,
            "mode": mode, "runs": runs, "store_load_s": load_s, "paths": rows,
            "all_agree": all(r["agree"] for r in rows), "load_avg": [round(x, 2) for x in os.getloadavg()]}


def table(result: dict[str, Any]) -> str:
    """The benchmark as a plain-text table."""
    head = (f"{result['studies']:,} studies · {result['database']} · engine {result['mode']} · ours {result['runs']} runs, "
            f"straightforward {result.get('naive_runs', result['runs'])} per filter\n"
            f"{'filter':<24}{'trials':>9}{'ours p50':>10}{'ours p95':>10}{'warm p50':>10}{'warm p95':>10}"
            f"{'naive p50':>11}{'naive p95':>11}{'ratio':>8}  agree")
    lines = [head]
    if "filters" not in result:  # run_paths: the paths alone
        lines = [f"{result['studies']:,} studies · {result['database']} · engine {result['mode']} · "
                 f"{result['runs']} runs · store ready in {result['store_load_s']} s · load {result['load_avg']}"]
    for r in result.get("filters", []):
        lines.append(f"{r['name']:<24}{r['matching_trials']:>9,}{r['ours_p50_s']:>10.3f}{r['ours_p95_s']:>10.3f}"
                     f"{r['warm_p50_s']:>10.4f}{r['warm_p95_s']:>10.4f}{r['naive_p50_s']:>11.3f}"
                     f"{r['naive_p95_s']:>11.3f}{r['ratio']:>8.1f}  {r['agree']}")
    if "filters" in result:
        lines.append(f"median ratio straightforward/ours: {result['median_ratio']} · all agree: "
                     f"{result['all_agree']} · peak RSS {result['peak_rss_mb']} MB")
    if result.get("paths"):
        lines.append(f"\n{'path':<28}{'engine p50':>11}{'sql p50':>10}{'ratio':>8}  agree")
        lines += [f"{r['path']:<28}" + (f"{r['engine_p50_s']:>11.3f}" if r["engine_p50_s"] is not None else f"{'-':>11}")
                  + (f"{r['sql_p50_s']:>10.3f}{r['ratio']:>8.1f}" if r["sql_p50_s"] is not None else f"{'-':>10}{'-':>8}")
                  + f"  {r['agree']}" + (f"  ({r['error']})" if r.get("error") else "") for r in result["paths"]]
    return "\n".join(lines)
