"""Benchmarks for planning a trial: how large, how long and how many sites comparable trials had, per phase, with the
n behind every number and what was left out.

Both engines give the same raw frames: sql/queries/planning_benchmarks.sql and planning_why_stopped.sql over the
matching trials, or the in-process store's arrays computing exactly the same (percentiles as PostgreSQL's
percentile_cont: linear between the two nearest ranks). The shaping into the page's tables is shared.
The status filter does not apply (as Explore's charts of closed trials): actual sizes and durations come from
trials that have ended, while the default filter keeps open trials only.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from services.dashboard.engine import Engine, engine_for
from services.dashboard.filters import Filters
from services.dashboard.timeline import NO_PHASE, phase_key, phase_label
from services.data import runtime
from services.data.db import Database, load_sql
from services.trials import plural

TIMEOUT_MS = 60_000
DAYS_PER_MONTH = 30  # months = days ÷ 30, as AACT's actual_duration and Explore's duration chart count them
TOP_REASONS = 10  # as Explore's "Top reasons for stopping"
QUANTILES = (0.25, 0.5, 0.75)
CLOSED = ("COMPLETED", "TERMINATED", "WITHDRAWN", "SUSPENDED")  # as Explore's "How closed trials ended"
MEASURES = ("enroll", "duration", "sites", "rate")
COUNT_COLUMNS = ("trials", "enroll_n", "enroll_estimated", "enroll_missing", "duration_n", "duration_no_start",
                 "duration_no_primary", "duration_estimated", "duration_negative", "sites_n", "sites_none", "rate_n",
                 "closed", "terminated")
RAW_COLUMNS = ("whole", "phase", *COUNT_COLUMNS[:4], "enroll_q", *COUNT_COLUMNS[4:9], "duration_q", "sites_n",
               "sites_none", "sites_q", "rate_n", "rate_q", "closed", "terminated")
METHOD = ("Medians and interquartile ranges (25th–75th percentile, interpolated as PostgreSQL's percentile_cont). "
          "A date or an enrollment counts as actual unless it is marked estimated or anticipated (AACT's own rule "
          "for its actual duration), so a trial whose enrollment or date type is not given at all counts as "
          "actual "
          "too (older records). Enrollment: actual enrollment. Duration: start → primary completion with "
          f"actual dates, in months of {DAYS_PER_MONTH} days. Sites: trials listing at least one site. Enrolled per "
          "site per month: actual enrollment ÷ sites ÷ actual duration in months, for trials with all three and a "
          "duration over 0 days. Terminated: share of closed trials (completed, terminated, withdrawn or "
          "suspended) that were terminated. The status filter does not apply here (as on Explore's charts of "
          "closed trials): actual numbers come from trials that have ended.")


@dataclass
class Planning:
    """What the Benchmarks section shows for one filter."""

    filters: Filters  # the filter the numbers are for (the status filter removed)
    table: pd.DataFrame  # one row per phase and one for all phases: numbers and the n behind each
    reasons: pd.DataFrame  # reason, trials, share of terminated trials
    excluded: list[str] = field(default_factory=list)  # what was left out, with counts
    totals: dict[str, int] = field(default_factory=dict)  # the all-phases row's counts


# ---- percentiles, as PostgreSQL computes them ------------------------------------------------------
def _sorted_quantiles(x: np.ndarray) -> list[float] | None:
    if x.size == 0:
        return None
    out = []
    for q in QUANTILES:
        pos = q * (x.size - 1)
        lo, hi = int(np.floor(pos)), int(np.ceil(pos))
        a, b = float(x[lo]), float(x[hi])
        out.append(a + (pos - lo) * (b - a) if hi > lo else a)
    return out


def _grouped_quantiles(groups: np.ndarray, values: np.ndarray, size: int) -> tuple[list[Any], list[float] | None]:
    """Quantiles of the values (NaN left out) per group code, and of all of them: one sort for every group."""
    keep = ~np.isnan(values)
    v = values[keep]
    by_value = np.argsort(v)
    v, g = v[by_value], groups[keep][by_value]
    by_group = np.argsort(g, kind="stable")  # small integers: a fast stable sort keeps each group's values in order
    gs, vs = g[by_group], v[by_group]
    bounds = np.searchsorted(gs, np.arange(size + 1))
    per = [_sorted_quantiles(vs[bounds[i]:bounds[i + 1]]) for i in range(size)]
    return per, _sorted_quantiles(v)


# ---- the engines' raw frames ----------------------------------------------------------------------
def frames_from_store(store: Any, mask: np.ndarray) -> tuple[pd.DataFrame, pd.DataFrame]:
    """planning_benchmarks.sql and planning_why_stopped.sql over the in-process store (same rows, same numbers)."""
    rows = np.flatnonzero(mask)
    size = store.phases.size
    phase = store.phases.codes[rows]
    enroll = store.enrollment[rows]
    enroll_est = store.enrollment_actual[rows] == 0
    enroll_ok = np.where(~np.isnan(enroll) & ~enroll_est, enroll, np.nan)
    start, pc = store.start_day[rows], store.primary_day[rows]
    dates_est = (store.start_actual[rows] == 0) | (store.primary_actual[rows] == 0)
    both = ~np.isnan(start) & ~np.isnan(pc)
    days_ok = np.where(both & ~dates_est & (pc >= start), pc - start, np.nan)
    sites = store.n_sites[rows].astype(np.float64)
    has_rate = ~np.isnan(enroll_ok) & (sites > 0) & (days_ok > 0)
    rate = np.full(rows.size, np.nan)
    np.divide(enroll_ok * 30, sites * days_ok, out=rate, where=has_rate)
    status = store.status.codes[rows]
    closed = store.status.lut(lambda v: v in CLOSED)[status]
    terminated = store.status.lut(lambda v: v == "TERMINATED")[status]
    counts = {name: np.bincount(phase[cond] if cond is not None else phase, minlength=size) for name, cond in (
        ("trials", None), ("enroll_n", ~np.isnan(enroll_ok)), ("enroll_estimated", ~np.isnan(enroll) & enroll_est),
        ("enroll_missing", np.isnan(enroll)), ("duration_n", ~np.isnan(days_ok)),
        ("duration_no_start", np.isnan(start)), ("duration_no_primary", ~np.isnan(start) & np.isnan(pc)),
        ("duration_estimated", both & dates_est), ("duration_negative", both & ~dates_est & (pc < start)),
        ("sites_n", sites > 0), ("sites_none", sites == 0), ("rate_n", has_rate), ("closed", closed),
        ("terminated", terminated))}
    q = {name: _grouped_quantiles(phase, values, size) for name, values in (
        ("enroll_q", enroll_ok), ("duration_q", days_ok), ("sites_q", np.where(sites > 0, sites, np.nan)),
        ("rate_q", rate))}
    out = []
    for code in np.flatnonzero(counts["trials"]).tolist():
        out.append({"whole": False, "phase": store.phases.labels[code],
                    **{name: int(n[code]) for name, n in counts.items()},
                    **{name: per[code] for name, (per, _) in q.items()}})
    out.append({"whole": True, "phase": None, **{name: int(n.sum()) for name, n in counts.items()},
                **{name: whole for name, (_, whole) in q.items()}})  # GROUPING SETS' () row: there even when empty
    bench = pd.DataFrame(out, columns=list(RAW_COLUMNS))
    why = store.why_stopped
    n = np.bincount(why.codes[rows[terminated]], minlength=why.size)
    nz = np.flatnonzero(n)
    order = nz[np.lexsort((nz, -n[nz]))]  # most first, then byte order of the text, no reason (the last code) last
    reasons = pd.DataFrame({"value": list(why.labels[order]), "n": [int(x) for x in n[order]]})
    return bench, reasons


def frames_sql(db: Database, cte: str, params: dict[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """planning_benchmarks.sql and planning_why_stopped.sql over the matching CTE, run concurrently."""
    found = db.fetch_many({name: (f"{cte}\n{load_sql(name)}", params)
                           for name in ("planning_benchmarks", "planning_why_stopped")}, timeout_ms=TIMEOUT_MS)
    for value in found.values():
        if isinstance(value, Exception):
            raise value
    bench = found["planning_benchmarks"]
    assert isinstance(bench, pd.DataFrame) and isinstance(found["planning_why_stopped"], pd.DataFrame)
    bench = bench.astype(object).where(bench.notna(), None)
    for col in ("enroll_q", "duration_q", "sites_q", "rate_q"):
        bench[col] = [None if v is None else [float(x) for x in v] for v in bench[col]]
    return bench[list(RAW_COLUMNS)], found["planning_why_stopped"]


# ---- shared shaping -------------------------------------------------------------------------------
def shape_table(bench: pd.DataFrame) -> pd.DataFrame:
    """The raw frame → the benchmarks table: one row per phase (in phase order) and 'All phases' last; for each
    measure its 25th percentile, median, 75th percentile and n; terminated share with the closed trials behind it."""
    records = bench.astype(object).where(bench.notna(), None).to_dict("records")
    records.sort(key=lambda r: (bool(r["whole"]), phase_key(None if r["phase"] is None else str(r["phase"]))))
    out = []
    for r in records:
        row: dict[str, Any] = {"phase": "ALL" if r["whole"] else (r["phase"] or NO_PHASE),
                               "phase_label": "All phases" if r["whole"] else phase_label(r["phase"]),
                               "trials": int(r["trials"])}
        for measure, name, scale in (("enroll", "enrollment", 1.0),
                                     ("duration", "duration_months", DAYS_PER_MONTH),
                                     ("sites", "sites", 1.0), ("rate", "enrolled_per_site_month", 1.0)):
            q = r[f"{measure}_q"]  # the quartiles (25th, median, 75th) or None
            p25, p50, p75 = [None] * 3 if q is None else [v / scale for v in q]
            row.update({f"{name}_p25": p25, f"{name}_median": p50, f"{name}_p75": p75,
                        f"{name}_n": int(r[f"{measure}_n"])})
        closed, terminated = int(r["closed"]), int(r["terminated"])
        row.update({"terminated": terminated, "closed": closed,
                    "terminated_share": round(terminated / closed, 4) if closed else None})
        out.append(row)
    return pd.DataFrame(out)


def shape_reasons(reasons: pd.DataFrame, terminated: int) -> pd.DataFrame:
    """The top reasons for stopping (as Explore's chart: lower-cased text), then the other reasons and the
    trials that give none, each with its share of the terminated trials."""
    df = reasons.astype(object).where(reasons.notna(), None)
    given = [(str(v), int(n)) for v, n in zip(df["value"], df["n"], strict=True) if v is not None]
    none = sum(int(n) for v, n in zip(df["value"], df["n"], strict=True) if v is None)
    counted = [(v[:1].upper() + v[1:], n) for v, n in given[:TOP_REASONS]]
    rest = given[TOP_REASONS:]
    if rest:
        counted.append((f"Other reasons ({len(rest):,} different texts)", sum(n for _, n in rest)))
    if none:
        counted.append(("No reason given", none))
    return pd.DataFrame([{"reason": text, "trials": n, "share": round(n / terminated, 4) if terminated else None}
                         for text, n in counted], columns=["reason", "trials", "share"])


def excluded_lines(totals: dict[str, int]) -> list[str]:
    """What each measure leaves out, with counts (all phases)."""
    def part(n: int, text: str) -> str | None:
        return f"{n:,} {text}" if n else None

    def line(title: str, used: int, parts: list[str | None]) -> str:
        left = [p for p in parts if p]
        return (f"{title}: {used:,} of {plural(totals['trials'], 'trial')}"
                + (" — left out " + ", ".join(left) if left else " — none left out") + ".")

    return [
        line("Enrollment", totals["enroll_n"], [part(totals["enroll_estimated"], "with estimated (anticipated) "
                                                                               "enrollment"),
                                                part(totals["enroll_missing"], "without enrollment")]),
        line("Duration", totals["duration_n"], [part(totals["duration_no_start"], "without a start date"),
                                                part(totals["duration_no_primary"],
                                                     "without a primary completion date"),
                                                part(totals["duration_estimated"], "with an estimated start or "
                                                                                   "primary completion date"),
                                                part(totals["duration_negative"], "whose primary completion is "
                                                                                  "before the start")]),
        line("Sites", totals["sites_n"], [part(totals["sites_none"], "listing no site")]),
        line("Enrolled per site per month", totals["rate_n"],
             ["the trials lacking actual enrollment, a site or an actual duration over 0 days"
              if totals["rate_n"] < totals["trials"] else None]),
    ]


def benchmarks(f: Filters, *, db: Database | None = None, engine: Engine | None = None) -> Planning:
    """The planning benchmarks of the trials matching every filter but status."""
    db = db or runtime.get_db()
    eng = engine or engine_for(db)
    g = replace(f, status=())
    bench, reasons = eng.planning_frames(g)
    table = shape_table(bench)
    whole = bench[bench["whole"].astype(bool)]
    totals = ({c: int(whole.iloc[0][c]) for c in COUNT_COLUMNS} if len(whole)
              else dict.fromkeys(COUNT_COLUMNS, 0))
    lines = excluded_lines(totals) if totals["trials"] else []
    return Planning(g, table, shape_reasons(reasons, totals["terminated"]), lines, totals)


def display_table(table: pd.DataFrame) -> pd.DataFrame:
    """The benchmarks table for reading: 'median (25th–75th)' text with its n beside it."""
    def cell(r: dict[str, Any], name: str, digits: int) -> str:
        if r[f"{name}_median"] is None or pd.isna(r[f"{name}_median"]):
            return "—"
        fmt = f"{{:,.{digits}f}}"
        return (f"{fmt.format(r[f'{name}_median'])} ({fmt.format(r[f'{name}_p25'])}–"
                f"{fmt.format(r[f'{name}_p75'])})")

    out = []
    for r in table.to_dict("records"):
        share = r["terminated_share"]
        out.append({
            "Phase": r["phase_label"], "Trials": r["trials"],
            "Enrollment": cell(r, "enrollment", 0), "n (enrollment)": r["enrollment_n"],
            "Duration, months": cell(r, "duration_months", 1), "n (duration)": r["duration_months_n"],
            "Sites": cell(r, "sites", 0), "n (sites)": r["sites_n"],
            "Enrolled / site / month": cell(r, "enrolled_per_site_month", 2),
            "n (per site / month)": r["enrolled_per_site_month_n"],
            "Terminated": "—" if share is None or pd.isna(share) else f"{share:.1%}",
            "n (closed)": r["closed"]})
    return pd.DataFrame(out)
