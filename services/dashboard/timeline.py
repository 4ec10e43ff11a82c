"""The Timeline page's numbers: the matching trials as bars (start → primary completion → completion) when they are
few, else how many are active in each quarter, by phase.

Both engines give the same raw frames: `spans` (how many trials share a phase, a start quarter and an end quarter:
sql/queries/timeline_spans.sql, or the in-process store's arrays) and, for the bars, the trials' rows
(sql/queries/timeline_trials.sql over the matched ids). Everything after that is shared, pure Python.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from services.dashboard.engine import Engine, engine_for
from services.dashboard.filters import Filters
from services.data import runtime
from services.data.db import Database, load_sql
from services.data.normalize import PHASES, label

BAR_LIMIT = 300  # up to this many matching trials the page draws one bar per trial; above, quarters by phase
TIMEOUT_MS = 60_000
QUARTER_SENTINEL = -1  # "no date" in the store's quarter arrays
NO_PHASE = "NONE"
GROUPS = ("sponsor", "phase")
COLOR_BY = ("phase", "status")


@dataclass
class Timeline:
    """What the Timeline section shows for one filter."""

    total: int  # matching trials
    mode: str  # "bars" (total ≤ BAR_LIMIT) or "aggregated"
    bars: pd.DataFrame  # bars: one row per segment of a trial (empty when aggregated)
    active: pd.DataFrame  # aggregated: quarter, label, phase, phase_label, active (empty for bars)
    excluded: dict[str, int] = field(default_factory=dict)  # no_start, no_end, end_before_start
    shown: int = 0  # trials drawn (bars) or counted (aggregated)


# ---- phases ---------------------------------------------------------------------------------------
def phase_key(value: str | None) -> tuple[int, str]:
    """Sort key of a canonical phase value: the single phases in order, combinations after their first part,
    then anything else, then no phase."""
    if value is None or value == NO_PHASE:
        return (99, "")
    parts = value.split("/")
    first = PHASES.index(parts[0]) if parts[0] in PHASES else 50
    return (first * 2 + (1 if len(parts) > 1 else 0), value)


def phase_label(value: str | None) -> str:
    """Human label of a canonical phase value (None: no phase, as observational studies have)."""
    return "No phase (observational)" if value is None or value == NO_PHASE else label("phase", value)


# ---- quarters -------------------------------------------------------------------------------------
def quarters_of_days(days: np.ndarray) -> np.ndarray:
    """Quarter numbers (year × 4 + quarter − 1) of dates given as days since 1970-01-01 (NaN → QUARTER_SENTINEL),
    as timeline_spans.sql computes them."""
    out = np.full(days.size, QUARTER_SENTINEL, dtype=np.int64)
    ok = ~np.isnan(days)
    months = days[ok].astype(np.int64).astype("datetime64[D]").astype("datetime64[M]").astype(np.int64)
    out[ok] = months // 3 + 1970 * 4
    return out


def quarter_of(day: dt.date) -> int:
    """The quarter number of a date."""
    return day.year * 4 + (day.month - 1) // 3


def quarter_label(q: int) -> str:
    """'2021 Q3' for a quarter number."""
    return f"{q // 4} Q{q % 4 + 1}"


def quarter_start(q: int) -> dt.date:
    """The first day of a quarter."""
    return dt.date(q // 4, (q % 4) * 3 + 1, 1)


# ---- the engines' raw frames ----------------------------------------------------------------------
def spans_from_store(store: Any, mask: np.ndarray) -> pd.DataFrame:
    """timeline_spans.sql over the in-process store: phase, start_q, end_q (None: no date), n."""
    rows = np.flatnonzero(mask)
    cols = ["phase", "start_q", "end_q", "n"]
    if rows.size == 0:
        return pd.DataFrame(columns=cols)
    completion = store.completion_day[rows]
    end = np.where(np.isnan(completion), store.primary_day[rows], completion)
    sq = quarters_of_days(store.start_day[rows]) + 1  # 0 = no date, so every part is non-negative
    eq = quarters_of_days(end) + 1
    width = int(max(sq.max(), eq.max())) + 1
    key = (store.phases.codes[rows].astype(np.int64) * width + sq) * width + eq
    keys, counts = np.unique(key, return_counts=True)
    phase = keys // (width * width)
    s = (keys // width) % width - 1
    e = keys % width - 1
    labels = store.phases.labels
    return pd.DataFrame({
        "phase": [labels[p] for p in phase.tolist()],
        "start_q": [None if v == QUARTER_SENTINEL else v for v in s.tolist()],
        "end_q": [None if v == QUARTER_SENTINEL else v for v in e.tolist()],
        "n": counts.astype(np.int64)})


def spans_sql(db: Database, cte: str, params: dict[str, Any]) -> pd.DataFrame:
    """timeline_spans.sql over the matching CTE."""
    return db.fetch_df(f"{cte}\n{load_sql('timeline_spans')}", params, timeout_ms=TIMEOUT_MS)


# ---- shared shaping -------------------------------------------------------------------------------
def active_by_quarter(spans: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, int]]:
    """Trials active in each quarter by phase (a trial is active from its start quarter to its end quarter, both
    included), and how many trials were left out: no start date, no end date, end before start."""
    excluded = {"no_start": 0, "no_end": 0, "end_before_start": 0}
    cols = ["quarter", "label", "phase", "phase_label", "active"]
    if spans.empty:
        return pd.DataFrame(columns=cols), excluded
    df = spans.astype(object).where(spans.notna(), None)
    keep: list[tuple[str, int, int, int]] = []
    for phase, s, e, n in zip(df["phase"], df["start_q"], df["end_q"], df["n"], strict=True):
        if s is None:
            excluded["no_start"] += int(n)
        elif e is None:
            excluded["no_end"] += int(n)
        elif int(e) < int(s):
            excluded["end_before_start"] += int(n)
        else:
            keep.append((NO_PHASE if phase is None else str(phase), int(s), int(e), int(n)))
    if not keep:
        return pd.DataFrame(columns=cols), excluded
    lo = min(k[1] for k in keep)
    hi = max(k[2] for k in keep)
    phases = sorted({k[0] for k in keep}, key=phase_key)
    diff = np.zeros((len(phases), hi - lo + 2), dtype=np.int64)
    where = {p: i for i, p in enumerate(phases)}
    for phase, s, e, n in keep:
        diff[where[phase], s - lo] += n
        diff[where[phase], e - lo + 1] -= n
    active = np.cumsum(diff, axis=1)[:, :-1]
    quarters = list(range(lo, hi + 1))
    out = pd.DataFrame({
        "quarter": [q for _ in phases for q in quarters],
        "label": [quarter_label(q) for _ in phases for q in quarters],
        "phase": [p for p in phases for _ in quarters],
        "phase_label": [phase_label(p) for p in phases for _ in quarters],
        "active": active.reshape(-1)})
    return out, excluded


def _mark(*flags: Any) -> str:
    """The mark of a segment from its dates' marks: estimated when either date is, else unknown when either
    type is not given, else actual."""
    values = [None if f is None or (isinstance(f, float) and np.isnan(f)) else bool(f) for f in flags]
    if any(v is False for v in values):
        return "estimated"
    if any(v is None for v in values):
        return "unknown"
    return "actual"


def bar_segments(trials: pd.DataFrame, group_by: str, color_by: str) -> tuple[pd.DataFrame, dict[str, int]]:
    """timeline_trials.sql rows → one row per bar segment (part "primary": start → primary completion, "follow-up":
    primary completion → completion, "whole": start → completion when no primary completion is given), with each trial's group, colour value, row order and the mark of its dates; and the trials left
    out (no start date, no end date, end before start)."""
    excluded = {"no_start": 0, "no_end": 0, "end_before_start": 0}
    cols = ["nct_id", "title", "group", "color", "status", "phase", "lead_sponsor", "part", "start", "end", "mark",
            "row"]
    if trials.empty:
        return pd.DataFrame(columns=cols), excluded
    df = trials.astype(object).where(trials.notna(), None)
    segments: list[dict[str, Any]] = []
    for r in df.to_dict("records"):
        start, pc, done = r["start_date"], r["primary_completion_date"], r["completion_date"]
        if start is None:
            excluded["no_start"] += 1
            continue
        end = done or pc
        if end is None:
            excluded["no_end"] += 1
            continue
        if end < start or (pc is not None and pc < start):
            excluded["end_before_start"] += 1
            continue
        phase = r["phase"] or NO_PHASE
        base = {"nct_id": r["nct_id"], "title": r["title"] or "", "status": r["status"], "phase": phase,
                "lead_sponsor": r["lead_sponsor"],
                "group": phase if group_by == "phase" else (r["lead_sponsor"] or "No lead sponsor given"),
                "color": phase if color_by == "phase" else (r["status"] or "UNKNOWN")}
        if pc is not None:
            segments.append({**base, "part": "primary", "start": start, "end": pc,
                             "mark": _mark(r["start_actual"], r["primary_actual"])})
            if done is not None and done > pc:
                segments.append({**base, "part": "follow-up", "start": pc, "end": done,
                                 "mark": _mark(r["primary_actual"], r["completion_actual"])})
        else:
            segments.append({**base, "part": "whole", "start": start, "end": done,
                             "mark": _mark(r["start_actual"], r["completion_actual"])})
    if not segments:
        return pd.DataFrame(columns=cols), excluded
    seg = pd.DataFrame(segments)
    first = seg.groupby("nct_id", sort=False)["start"].min()
    sizes = seg.drop_duplicates("nct_id").groupby("group")["nct_id"].count()
    if group_by == "phase":
        group_order = sorted(sizes.index, key=phase_key)
    else:  # sponsors with most trials first, then by name
        group_order = sorted(sizes.index, key=lambda g: (-int(sizes[g]), str(g).lower()))
    rank = {g: i for i, g in enumerate(group_order)}
    trial_order = sorted(first.index, key=lambda n: (rank[seg.loc[seg["nct_id"] == n, "group"].iloc[0]],
                                                     first[n], n))
    row = {n: i for i, n in enumerate(trial_order)}
    seg["row"] = [row[n] for n in seg["nct_id"]]
    return seg.sort_values(["row", "start"]).reset_index(drop=True)[cols], excluded


def trial_rows(db: Database, select: str, params: dict[str, Any]) -> pd.DataFrame:
    """timeline_trials.sql over a SELECT of matching NCT ids."""
    from services.dashboard.engine import as_cte

    return db.fetch_df(f"{as_cte(select)}\n{load_sql('timeline_trials')}", params, timeout_ms=TIMEOUT_MS)


def timeline(f: Filters, group_by: str = "sponsor", color_by: str = "phase", *, db: Database | None = None,
             engine: Engine | None = None, bar_limit: int = BAR_LIMIT) -> Timeline:
    """The timeline of the matching trials: bars for each trial when there are at most `bar_limit`, else trials
    active per quarter by phase."""
    db = db or runtime.get_db()
    eng = engine or engine_for(db)
    group_by = group_by if group_by in GROUPS else GROUPS[0]
    color_by = color_by if color_by in COLOR_BY else COLOR_BY[0]
    spans = eng.timeline_spans(f)  # every matching trial is in one span (dates or not): their sum is the count
    total = int(spans["n"].sum()) if len(spans) else 0
    if total <= bar_limit:
        select, params = eng.matched_select(f)
        bars, excluded = bar_segments(trial_rows(db, select, params), group_by, color_by)
        return Timeline(total, "bars", bars, pd.DataFrame(), excluded, int(bars["nct_id"].nunique()))
    active, excluded = active_by_quarter(spans)
    return Timeline(total, "aggregated", pd.DataFrame(), active, excluded, total - sum(excluded.values()))


def excluded_note(t: Timeline) -> str:
    """A sentence on the trials the timeline leaves out (empty when none)."""
    parts = [f"{n:,} {text}" for key, text in (("no_start", "without a start date"),
                                               ("no_end", "without a completion or primary completion date"),
                                               ("end_before_start", "whose dates end before they start"))
             if (n := t.excluded.get(key, 0))]
    return ("Left out: " + "; ".join(parts) + ".") if parts else "Every matching trial has the dates it needs."
