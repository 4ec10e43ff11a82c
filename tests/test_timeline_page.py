"""The Timeline page under AppTest: bars for a few trials, quarters for many, the benchmarks table, the view in the URL."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from services import inert
from services.dashboard import planning, timeline
from services.dashboard.filters import Filters

PROJECT = Path(__file__).resolve().parent.parent
PAGE = "app_pages/timeline.py"


def _page(params: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(str(PROJECT / PAGE), default_timeout=120)
    for key, value in (params or {}).items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def _specs(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def _captions(at: AppTest) -> str:
    return " ".join(c.value for c in at.caption)


def test_timeline_page_aggregates_many_trials(db):
    at = _page()
    f = at.session_state["filters"]
    assert f == Filters()
    want = timeline.timeline(f, db=db)
    assert want.mode == "aggregated"
    (spec,) = _specs(at)
    assert spec["layout"]["barmode"] == "stack"
    traces = spec["data"]
    assert [t["name"] for t in traces] == list(dict.fromkeys(want.active["phase_label"]))
    shown = {(t["name"], x): y for t in traces for x, y in zip(t["x"], t["y"], strict=True)}
    for r in want.active.to_dict("records"):
        assert shown[(r["phase_label"], timeline.quarter_start(int(r["quarter"])).isoformat())] == r["active"]
    assert f"{want.total:,} matching trials — more than {timeline.BAR_LIMIT:,}" in _captions(at)
    assert timeline.excluded_note(want) in _captions(at)


def test_timeline_page_bars_for_few_trials_and_view_in_url(db):
    at = _page({"condition": "asthma", "colour_by": "status", "group_by": "phase"})
    f = at.session_state["filters"]
    want = timeline.timeline(f, "phase", "status", db=db)
    assert want.mode == "bars" and want.shown > 0
    (spec,) = _specs(at)
    bars = [t for t in spec["data"] if t.get("customdata")]
    assert sorted({c[0] for t in bars for c in t["customdata"]}) == sorted(set(want.bars["nct_id"]))
    assert len([c for t in bars for c in t["customdata"]]) == len(want.bars)  # one bar per segment
    labels = [a["text"] for a in spec["layout"]["annotations"]]
    assert sum('href="Trials?nct=' in t for t in labels) == want.shown
    assert at.radio(key="tl_colour").value == "status" and at.radio(key="tl_group").value == "phase"
    assert at.query_params["colour_by"] == "status" and at.query_params["group_by"] == "phase"
    legend = [t["name"] for t in spec["data"] if t.get("showlegend")]
    assert any(name.startswith("Solid: actual") or name.startswith("Dotted") for name in legend)
    # back to the defaults: the view parameters leave the URL
    at.radio(key="tl_colour").set_value("phase").run()
    assert "colour_by" not in at.query_params


def test_timeline_page_benchmarks_table_and_exports(db):
    at = _page({"condition": "melanoma"})
    f = at.session_state["filters"]
    plan = planning.benchmarks(f, db=db)
    tables = at.dataframe
    assert len(tables) == 2
    shown = tables[0].value
    want = planning.display_table(plan.table)
    assert shown.astype(str).values.tolist() == want.astype(str).values.tolist()
    assert tables[1].value["trials"].tolist() == plan.reasons["trials"].tolist()
    text = " ".join(m.value for m in at.markdown)
    for line in plan.excluded:
        assert inert.md_line(line) in text
    assert f"{plan.totals['terminated']:,} of {plan.totals['closed']:,} closed trials" in text
    assert len(at.get("download_button")) == 4


def test_timeline_page_no_match(db):
    at = _page({"condition": "no such disease anywhere"})
    infos = " ".join(i.value for i in at.info)
    assert "No trial matches these filters" in infos
    assert not _specs(at)
