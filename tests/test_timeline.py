"""The Timeline page's services: hand-computed fixtures, PostgreSQL's own percentiles, the sample, both engines equal."""

from __future__ import annotations

import datetime as dt
import statistics

import numpy as np
import pandas as pd
import pytest

from services.dashboard import engine, planning, timechart, timeline
from services.dashboard.filters import Filters
from tests.test_stats_modes import QUERIES

D = dt.date


# ---- pure pieces on hand-made fixtures -------------------------------------------------------------
def test_timeline_quarters_of_days():
    days = np.array([(D(2020, 1, 1) - D(1970, 1, 1)).days, (D(2020, 3, 31) - D(1970, 1, 1)).days,
                     (D(2020, 4, 1) - D(1970, 1, 1)).days, (D(1969, 12, 31) - D(1970, 1, 1)).days, np.nan])
    assert timeline.quarters_of_days(days).tolist() == [8080, 8080, 8081, 7879, timeline.QUARTER_SENTINEL]
    assert timeline.quarter_of(D(2020, 12, 31)) == 8083 and timeline.quarter_label(8083) == "2020 Q4"
    assert timeline.quarter_start(8081) == D(2020, 4, 1)


def test_timeline_active_by_quarter_hand_computed():
    q = timeline.quarter_of
    spans = pd.DataFrame([
        {"phase": "PHASE2", "start_q": q(D(2020, 1, 5)), "end_q": q(D(2020, 8, 1)), "n": 2},  # 2020 Q1–Q3
        {"phase": "PHASE2", "start_q": q(D(2020, 7, 1)), "end_q": q(D(2020, 7, 30)), "n": 1},  # Q3 only
        {"phase": None, "start_q": q(D(2020, 4, 1)), "end_q": q(D(2020, 12, 1)), "n": 3},  # Q2–Q4, no phase
        {"phase": "PHASE1", "start_q": None, "end_q": q(D(2020, 1, 1)), "n": 4},  # no start
        {"phase": "PHASE1", "start_q": q(D(2020, 1, 1)), "end_q": None, "n": 5},  # no end
        {"phase": "PHASE1", "start_q": q(D(2021, 1, 1)), "end_q": q(D(2020, 1, 1)), "n": 6},  # ends before start
    ])
    active, excluded = timeline.active_by_quarter(spans)
    assert excluded == {"no_start": 4, "no_end": 5, "end_before_start": 6}
    got = {(r["phase"], r["label"]): r["active"] for r in active.to_dict("records")}
    assert got == {("PHASE2", "2020 Q1"): 2, ("PHASE2", "2020 Q2"): 2, ("PHASE2", "2020 Q3"): 3,
                   ("PHASE2", "2020 Q4"): 0, ("NONE", "2020 Q1"): 0, ("NONE", "2020 Q2"): 3,
                   ("NONE", "2020 Q3"): 3, ("NONE", "2020 Q4"): 3}
    assert list(dict.fromkeys(active["phase"])) == ["PHASE2", "NONE"]  # phase order, no phase last


def _trial(nct: str, sponsor: str | None, phase: str | None, start: D | None, pc: D | None, done: D | None,
           marks: tuple[bool | None, bool | None, bool | None] = (True, True, True)) -> dict:
    return {"nct_id": nct, "title": f"Trial {nct}", "phase": phase, "status": "COMPLETED", "lead_sponsor": sponsor,
            "start_date": start, "primary_completion_date": pc, "completion_date": done,
            "start_actual": marks[0], "primary_actual": marks[1], "completion_actual": marks[2]}


def test_timeline_bar_segments_hand_computed():
    trials = pd.DataFrame([
        _trial("NCT00000001", "Beta", "PHASE2", D(2019, 1, 1), D(2020, 1, 1), D(2021, 1, 1), (True, True, False)),
        _trial("NCT00000002", "Alpha", "PHASE3", D(2018, 1, 1), D(2019, 1, 1), None, (True, None, None)),
        _trial("NCT00000003", "Beta", "PHASE1", D(2017, 1, 1), None, D(2018, 6, 1), (False, None, True)),
        _trial("NCT00000004", "Alpha", None, None, D(2019, 1, 1), None),  # no start: left out
        _trial("NCT00000005", None, "PHASE2", D(2020, 1, 1), None, None),  # no end: left out
        _trial("NCT00000006", "Beta", "PHASE2", D(2020, 1, 1), D(2019, 1, 1), D(2021, 1, 1)),  # pc before start
    ])
    seg, excluded = timeline.bar_segments(trials, "sponsor", "phase")
    assert excluded == {"no_start": 1, "no_end": 1, "end_before_start": 1}
    rows = [(r["nct_id"], r["group"], r["part"], r["start"], r["end"], r["mark"], r["row"])
            for r in seg.to_dict("records")]
    # Beta has two trials, Alpha one: Beta first; within a group by start date.
    assert rows == [
        ("NCT00000003", "Beta", "whole", D(2017, 1, 1), D(2018, 6, 1), "estimated", 0),  # no primary completion
        ("NCT00000001", "Beta", "primary", D(2019, 1, 1), D(2020, 1, 1), "actual", 1),
        ("NCT00000001", "Beta", "follow-up", D(2020, 1, 1), D(2021, 1, 1), "estimated", 1),
        ("NCT00000002", "Alpha", "primary", D(2018, 1, 1), D(2019, 1, 1), "unknown", 2),
    ]
    by_phase, _ = timeline.bar_segments(trials, "phase", "status")
    assert list(dict.fromkeys(by_phase["group"])) == ["PHASE1", "PHASE2", "PHASE3"]
    assert set(by_phase["color"]) == {"COMPLETED"}


def test_timeline_gantt_figure_links_and_legend():
    trials = pd.DataFrame([_trial("NCT00000001", "<b>Beta</b>", "PHASE2", D(2019, 1, 1), D(2020, 1, 1),
                                  D(2021, 1, 1), (True, True, False))])
    seg, _ = timeline.bar_segments(trials, "sponsor", "phase")
    fig = timechart.gantt_figure(seg, "phase", "sponsor", D(2020, 6, 1))
    names = [t.name for t in fig.data if t.showlegend]
    assert names == ["Phase 2", "Solid: actual dates", "Hatched: estimated (planned) dates"]
    data = [t for t in fig.data if not t.showlegend]
    assert [list(t.customdata[0]) for t in data] == [["NCT00000001"], ["NCT00000001"]]
    assert [t.marker.pattern.shape for t in data] == ["", "/"]
    labels = [a.text for a in fig.layout.annotations if a.xref == "paper"]
    assert labels[0] == "<b>&lt;b&gt;Beta&lt;/b&gt;</b> (1)"  # registry text stays text
    assert labels[1].startswith('<a href="Trials?nct=NCT00000001" target="_self">NCT00000001')


def test_timeline_gantt_axis_fits_the_trials_shown():
    """Issue 38: the axis spans the bars (and today), a month either side; autorange had counted a 30-year
    bar's length as a date since 1970 and ran 2000–2065."""
    trials = pd.DataFrame([_trial("NCT00000001", "A", "PHASE2", D(2018, 3, 1), D(2048, 3, 1), D(2050, 1, 1)),
                           _trial("NCT00000002", "A", "PHASE2", D(2016, 5, 1), D(2019, 1, 1), D(2019, 6, 1))])
    seg, _ = timeline.bar_segments(trials, "sponsor", "phase")
    fig = timechart.gantt_figure(seg, "phase", "sponsor", D(2026, 1, 1))
    assert list(fig.layout.xaxis.range) == ["2016-03-31", "2050-02-01"]
    assert fig.layout.xaxis.autorange is False


def test_timeline_gantt_hover_names_the_dates_a_bar_spans():
    # A trial without a primary completion date is drawn from start to completion; its hover called that span
    # "Start → primary completion", so the study completion date read as the primary completion.
    trials = pd.DataFrame([
        _trial("NCT00000001", "A", "PHASE2", D(2019, 1, 1), D(2020, 1, 1), D(2021, 1, 1)),
        _trial("NCT00000002", "A", "PHASE2", D(2017, 1, 1), None, D(2018, 6, 1)),
        _trial("NCT00000003", "A", "PHASE2", D(2018, 1, 1), D(2019, 1, 1), None)])
    seg, _ = timeline.bar_segments(trials, "sponsor", "phase")
    fig = timechart.gantt_figure(seg, "phase", "sponsor", D(2020, 6, 1))
    spans = {(str(t.customdata[i][0]), t.width, text.split("<br>")[1])
             for t in fig.data if not t.showlegend for i, text in enumerate(t.hovertext)}
    assert spans == {
        ("NCT00000001", 0.8, "Start → primary completion: 2019-01-01 → 2020-01-01 (actual dates)"),
        ("NCT00000001", 0.4, "Primary completion → completion: 2020-01-01 → 2021-01-01 (actual dates)"),
        ("NCT00000002", 0.8, "Start → completion (no primary completion date): 2017-01-01 → 2018-06-01 (actual dates)"),
        ("NCT00000003", 0.8, "Start → primary completion: 2018-01-01 → 2019-01-01 (actual dates)")}


def test_planning_quantiles_equal_postgres_percentile_cont(db):
    rng = np.random.default_rng(7)
    for values in ([5.0], [1.0, 2.0], [3.0, 1.0, 2.0, 10.0], rng.integers(0, 5000, 101).astype(float).tolist(),
                   (rng.random(57) * 1000 / 7).tolist()):
        want = db.fetch_value("SELECT percentile_cont(ARRAY[0.25, 0.5, 0.75]) WITHIN GROUP (ORDER BY v) "
                              "FROM unnest(CAST(:v AS float8[])) v", {"v": values})
        assert planning._sorted_quantiles(np.sort(np.array(values))) == [float(x) for x in want]
    assert planning._sorted_quantiles(np.array([])) is None


def test_planning_reasons_top_other_and_none():
    reasons = pd.DataFrame({"value": [None, *[f"reason {i:02d}" for i in range(12)]],
                            "n": [5, *range(12, 0, -1)]})
    shaped = planning.shape_reasons(reasons, 5 + sum(range(1, 13)))
    assert shaped["reason"].tolist()[:2] == ["Reason 00", "Reason 01"]
    assert shaped.iloc[10].to_dict() == {"reason": "Other reasons (2 different texts)", "trials": 3,
                                         "share": round(3 / 83, 4)}
    assert shaped.iloc[11].to_dict() == {"reason": "No reason given", "trials": 5, "share": round(5 / 83, 4)}



def test_planning_lines_say_one_trial_in_the_singular():
    # A filter matching one trial said "Enrollment: 1 of 1 trials — none left out."
    totals = dict.fromkeys(planning.COUNT_COLUMNS, 0) | {"trials": 1, "enroll_n": 1, "duration_n": 0,
                                                         "duration_no_start": 1, "sites_n": 1, "rate_n": 0}
    lines = planning.excluded_lines(totals)
    assert lines[0] == "Enrollment: 1 of 1 trial — none left out."
    assert lines[1] == "Duration: 0 of 1 trial — left out 1 without a start date."
    assert planning.excluded_lines(totals | {"trials": 2, "sites_n": 2})[2] == "Sites: 2 of 2 trials — none left out."

# ---- the sample, computed by hand from the trials' own rows --------------------------------------
def _inclusive(values: list[float]) -> list[float] | None:
    """Linear interpolation between closest ranks, as statistics.quantiles(method='inclusive')."""
    if not values:
        return None
    if len(values) == 1:
        return [values[0]] * 3
    return statistics.quantiles(values, n=4, method="inclusive")


def test_planning_sample_hand_computed(db):
    f, _ = Filters.from_query({"condition": "melanoma", "status": "ANY"})
    ids = engine.SqlEngine(db).matching_ids(f)
    rows = db.fetch_rows(
        "SELECT s.nct_id, s.enrollment, s.enrollment_type, s.start_date, s.start_date_type, "
        "s.primary_completion_date, s.primary_completion_date_type, s.overall_status, "
        "(SELECT count(*) FROM ctgov.facilities fa WHERE fa.nct_id = s.nct_id) AS sites "
        "FROM ctgov.studies s WHERE s.nct_id = ANY(CAST(:ids AS text[]))", {"ids": ids})
    assert len(rows) == len(ids) > 20

    def actual(kind: str | None) -> bool:
        return (kind or "").upper() not in ("ESTIMATED", "ANTICIPATED")

    enroll = [float(r["enrollment"]) for r in rows if r["enrollment"] is not None and actual(r["enrollment_type"])]
    days = [float((r["primary_completion_date"] - r["start_date"]).days) for r in rows
            if r["start_date"] and r["primary_completion_date"] and actual(r["start_date_type"])
            and actual(r["primary_completion_date_type"]) and r["primary_completion_date"] >= r["start_date"]]
    sites = [float(r["sites"]) for r in rows if r["sites"] > 0]
    closed = [r for r in rows if str(r["overall_status"]).upper() in ("COMPLETED", "TERMINATED", "WITHDRAWN",
                                                                      "SUSPENDED")]
    terminated = [r for r in closed if str(r["overall_status"]).upper() == "TERMINATED"]
    for eng in (engine.SqlEngine(db), engine.MemoryEngine(db)):
        p = planning.benchmarks(Filters(condition="melanoma"), db=db, engine=eng)  # the status filter is dropped
        whole = p.table[p.table["phase"] == "ALL"].iloc[0]
        assert p.totals["trials"] == len(rows)
        assert (whole["enrollment_n"], whole["duration_months_n"], whole["sites_n"]) == (len(enroll), len(days),
                                                                                        len(sites))
        assert [whole["enrollment_p25"], whole["enrollment_median"], whole["enrollment_p75"]] == pytest.approx(
            _inclusive(enroll), abs=1e-9)
        assert [whole["duration_months_p25"] * 30, whole["duration_months_median"] * 30,
                whole["duration_months_p75"] * 30] == pytest.approx(_inclusive(days), abs=1e-9)
        assert [whole["sites_p25"], whole["sites_median"], whole["sites_p75"]] == pytest.approx(_inclusive(sites))
        assert (whole["closed"], whole["terminated"]) == (len(closed), len(terminated))
        assert p.totals["enroll_n"] + p.totals["enroll_estimated"] + p.totals["enroll_missing"] == len(rows)
        assert sum(p.totals[k] for k in ("duration_n", "duration_no_start", "duration_no_primary",
                                         "duration_estimated", "duration_negative")) == len(rows)
        assert int(p.reasons["trials"].sum()) == len(terminated)
        per_phase = p.table[p.table["phase"] != "ALL"]
        assert int(per_phase["trials"].sum()) == len(rows)


def test_timeline_sample_bars_and_aggregated(db):
    small = Filters(condition="asthma")
    t = timeline.timeline(small, "phase", "status", db=db)
    ids = engine.engine_for(db).matching_ids(small)
    assert t.mode == "bars" and t.total == len(ids) <= timeline.BAR_LIMIT
    assert t.shown + sum(t.excluded.values()) == t.total
    assert set(t.bars["nct_id"]) <= set(ids)
    big = timeline.timeline(Filters(), db=db)
    assert big.mode == "aggregated" and big.total > timeline.BAR_LIMIT
    assert big.shown + sum(big.excluded.values()) == big.total
    # trials active in a quarter: those starting on or before it and ending on or after it
    q = int(big.active["quarter"].median())
    want = db.fetch_value(
        "SELECT count(*) FROM ctgov.studies s WHERE s.nct_id = ANY(CAST(:ids AS text[])) AND s.start_date IS NOT NULL "
        "AND (extract(year FROM s.start_date) * 4 + (extract(month FROM s.start_date) - 1)::int / 3) <= :q "
        "AND (extract(year FROM COALESCE(s.completion_date, s.primary_completion_date)) * 4 "
        "+ (extract(month FROM COALESCE(s.completion_date, s.primary_completion_date)) - 1)::int / 3) >= :q",
        {"ids": engine.engine_for(db).matching_ids(Filters()), "q": q})
    assert int(big.active.loc[big.active["quarter"] == q, "active"].sum()) == want


# ---- both engines, the same numbers -------------------------------------------------------------
def _rows(df: pd.DataFrame) -> list[tuple]:
    clean = df.astype(object).where(df.notna(), None)
    return sorted((tuple(tuple(v) if isinstance(v, list) else v for v in r) for r in clean.itertuples(index=False)),
                  key=repr)


@pytest.mark.parametrize("query", QUERIES, ids=[str(q) for q in QUERIES])
def test_timeline_and_planning_engines_agree(db, query):
    f, _ = Filters.from_query(query)
    memory, sql = engine.MemoryEngine(db), engine.SqlEngine(db)
    assert _rows(memory.timeline_spans(f)) == _rows(sql.timeline_spans(f))
    (mb, mr), (sb, sr) = memory.planning_frames(f), sql.planning_frames(f)
    assert _rows(mb) == _rows(sb)
    assert mr.astype(object).where(mr.notna(), None).values.tolist() == \
        sr.astype(object).where(sr.notna(), None).values.tolist()
    for group_by in timeline.GROUPS:
        a = timeline.timeline(f, group_by, "status", db=db, engine=memory)
        b = timeline.timeline(f, group_by, "status", db=db, engine=sql)
        assert (a.mode, a.total, a.excluded) == (b.mode, b.total, b.excluded)
        assert a.bars.equals(b.bars) and a.active.equals(b.active)
    pa = planning.benchmarks(f, db=db, engine=memory)
    pb = planning.benchmarks(f, db=db, engine=sql)
    assert pa.table.equals(pb.table) and pa.reasons.equals(pb.reasons) and pa.excluded == pb.excluded
