"""Compare two landscapes: the service's numbers are the single-landscape numbers (both engines), B's URL form and
notices, the export, the grouped-bar charts, and the page under AppTest (render, B edits, actions, bad links)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from services import inert
from services.dashboard import charts, compare, engine, export, stats
from services.dashboard.filters import Filters

PROJECT = Path(__file__).resolve().parent.parent
COMPARE = "app_pages/compare.py"

PAIRS = [  # (A, B) as share-link queries: periods, sponsors, countries, disjoint and nested sets
    ({"condition": "lung cancer", "start_to": "2014", "status": "ANY"},
     {"condition": "lung cancer", "start_from": "2015", "status": "ANY"}),
    ({"funder": "INDUSTRY", "status": "ANY"}, {"funder": "NIH", "status": "ANY"}),
    ({"country": "Japan"}, {"country": "United States"}),
    ({}, {"status": "ANY"}),
    ({"condition": "diabetes", "phase": "PHASE3", "status": "ANY"}, {"condition": "no such disease anywhere"}),
]


def _filters(query: dict[str, str]) -> Filters:
    f, notices = Filters.from_query(query)
    assert notices == []
    return f


def _want_rows(d: stats.Dashboard) -> dict[tuple[str, object], int]:
    """Every number of one single-landscape dashboard, by (section, key), as compare keys them."""
    out: dict[tuple[str, object], int] = {("kpis", k): v for k, v in d.kpis.items()}
    out.update({("funnel", s["key"]): int(s["count"]) for s in d.funnel})
    for facet, rows in d.facets.items():
        for r in rows:
            out[(facet, compare._key(facet, r))] = int(r["count"])
    return out


def _got_rows(c: compare.Comparison, side: str) -> dict[tuple[str, object], int]:
    got = {(r.section, r.key): r.a_count if side == "A" else r.b_count for r in c.rows}
    assert len(got) == len(c.rows)  # one row per value
    return {k: n for k, n in got.items() if n is not None}


@pytest.mark.parametrize("kind", ["memory", "sql"])
@pytest.mark.parametrize("pair", PAIRS, ids=[f"{a}|{b}" for a, b in PAIRS])
def test_compare_numbers_equal_single_landscape_numbers(db, kind, pair):
    fa, fb = _filters(pair[0]), _filters(pair[1])
    eng = engine.MemoryEngine(db) if kind == "memory" else engine.SqlEngine(db)

    def dash(f: Filters) -> stats.Dashboard:
        return stats.dashboard(f, db=db, engine=eng, timeout_ms=60_000)

    c = compare.compare(fa, fb, dash)
    single_a, single_b = dash(fa), dash(fb)
    assert c.errors == {} and c.a.filters == fa and c.b.filters == fb
    want_a, want_b = _want_rows(single_a), _want_rows(single_b)
    # Every number of each single landscape is on the comparison; the only other counts are the zeros of values
    # that only the other side has in a complete (not top-N) list.
    for got, want, other in ((_got_rows(c, "A"), want_a, want_b), (_got_rows(c, "B"), want_b, want_a)):
        want = {k: v for k, v in want.items() if k[0] != "kpis" or k[1] in dict(compare.KPIS)}
        assert {k: v for k, v in got.items() if k in want} == want
        extra = {k: v for k, v in got.items() if k not in want}
        assert all(v == 0 and k in other and not compare.is_top_list(k[0]) for k, v in extra.items()), extra
    for r in c.rows:
        if r.a_count is not None and r.b_count is not None:
            assert r.diff_count == r.b_count - r.a_count
        if r.section in stats.FACETS and not compare.is_top_list(r.section):
            assert r.a_count is not None and r.b_count is not None, r  # complete lists: missing means 0
        if r.section in stats.FACETS and r.section not in ("outcome", "why_stopped", "results_by_year"):
            base = single_a.kpis["matching_trials"]
            assert r.a_share == (r.a_count / base if base and r.a_count is not None else None)


def test_compare_shares_zeros_and_unknowns(db):
    fa = _filters({"condition": "lung cancer", "start_to": "2014", "status": "ANY"})
    fb = _filters({"condition": "no such disease anywhere"})
    c = compare.compare(fa, fb, lambda f: stats.dashboard(f, db=db))
    assert c.b.kpis["matching_trials"] == 0
    phase = {r.value: r for r in c.section("phase")}
    assert all(r.b_count == 0 and r.b_share is None for r in phase.values())  # complete list: 0, no share of 0
    assert all(r.diff_count == -r.a_count for r in phase.values())
    cond = c.section("conditions")
    assert cond and all(r.b_count is None and r.diff_count is None and r.diff_pp is None for r in cond)
    outcome = c.section("outcome")
    total = sum(r.a_count for r in outcome if r.a_count)
    assert {r.value: r.a_share for r in outcome} == {r.value: r.a_count / total for r in outcome}
    rec = {r.value: r for r in c.section("kpis")}["recruiting"]
    assert rec.a_share == c.a.kpis["recruiting"] / c.a.kpis["matching_trials"]
    years = c.section("results_by_year")
    assert [r.value for r in years] == sorted(r.value for r in years)
    assert {r.value: r.a_share for r in years} == {r["value"]: r["rate"] for r in c.a.facets["results_by_year"]}


def test_compare_same_filters_compute_once():
    calls: list[Filters] = []

    def dash(f: Filters) -> stats.Dashboard:
        calls.append(f)
        return stats.Dashboard(f, {"matching_trials": 4}, [], {})

    c = compare.compare(Filters(), Filters(), dash)
    assert calls == [Filters()] and c.a is c.b
    assert {r.value: (r.a_count, r.b_count, r.diff_count) for r in c.section("kpis")}["matching_trials"] == (4, 4, 0)


def test_b_link_round_trip_and_notices():
    fb = Filters(condition="NSCLC", status=(), phase=("PHASE2", "PHASE3"), start_from=2020, country=("Japan",))
    query = compare.b_query(fb)
    assert query == {"b.condition": ["NSCLC"], "b.status": ["ANY"], "b.phase": ["PHASE2", "PHASE3"],
                     "b.country": ["Japan"], "b.start_from": ["2020"]}
    assert compare.b_from_query({**query, "condition": "diabetes"}) == (fb, [])
    got, notices = compare.b_from_query({"b.phase": "PHASE9", "b.bogus": "1", "b.sort": "x", "b.age": "-3",
                                         "b.condition": "asthma"})
    assert got == Filters(condition="asthma")
    assert notices[:2] == ["Filter set B: Ignored unknown parameter “b.bogus”.",
                           "Filter set B: Ignored unknown parameter “b.sort”."]
    assert len(notices) == 4 and all(n.startswith("Filter set B: Ignored ") for n in notices)
    # A's reading leaves B's parameters alone (no "unknown parameter" for them).
    assert Filters.from_query({"condition": "asthma", "b.condition": "x", "b.bogus": "y"}) == (
        Filters(condition="asthma"), [])


def test_comparison_export_csv_and_json(db):
    fa, fb = _filters({"country": "Japan"}), _filters({"country": "Germany"})
    c = compare.compare(fa, fb, lambda f: stats.dashboard(f, db=db))
    table = compare.comparison_frame(c)
    assert list(table.columns) == list(compare.COLUMNS) and len(table) == len(c.rows) + 2
    assert table.iloc[0]["value"] == "A" and table.iloc[0]["share_of"] == "country=Japan"
    assert table.iloc[1]["label"] == "; ".join(fb.describe())
    back = pd.read_csv(io.BytesIO(export.to_bytes(table, "csv")))
    kpi = back[back["section"] == "kpis"].set_index("value")
    assert kpi.loc["matching_trials", "a_trials"] == c.a.kpis["matching_trials"]
    assert kpi.loc["matching_trials", "difference_trials"] == c.b.kpis["matching_trials"] - c.a.kpis["matching_trials"]
    records = json.loads(export.to_bytes(table, "json"))
    assert len(records) == len(table) and records[0]["a_trials"] is None
    phase2 = next(r for r in records if r["section"] == "phase" and r["value"] == "PHASE2")
    row = next(r for r in c.section("phase") if r.value == "PHASE2")
    assert (phase2["a_trials"], phase2["b_trials"], phase2["difference_pp"]) == (row.a_count, row.b_count, row.diff_pp)


def test_compare_figure_grouped_bars_labelled_and_coloured():
    rows = [compare.Row("countries", "Countries", "Japan", "Japan", 10, None, 0.5, None, compare.SHARE_OF_MATCHING),
            compare.Row("countries", "Countries", "Germany", "Germany", None, 3, None, 0.25, compare.SHARE_OF_MATCHING)]
    fig = charts.compare_figure("Countries", "hbar", rows, "count", {"A": "A: Japan", "B": "B: Germany"})
    a, b = fig.data
    assert (a.name, b.name) == ("A: Japan", "B: Germany") and fig.layout.barmode == "group"
    assert (a.marker.color, b.marker.color) == (charts.SIDE_COLORS["A"], charts.SIDE_COLORS["B"])
    assert list(a.x) == [10, None] and list(b.x) == [None, 3] and list(a.y) == ["Japan", "Germany"]
    assert "not in B's top list" in b.customdata[0][1]
    share = charts.compare_figure("Countries", "bar", rows, "share", {"A": "A", "B": "B"})
    assert list(share.data[0].y) == [50.0, None] and list(share.data[1].y) == [None, 25.0]
    assert share.layout.yaxis.title.text == compare.SHARE_OF_MATCHING
    assert charts.compare_figure("Empty", "bar", [], "count").layout.annotations[0].text.startswith("Neither")


# ---- the page --------------------------------------------------------------------------------------
def _page(params: dict[str, str | list[str]] | None = None) -> AppTest:
    at = AppTest.from_file(str(PROJECT / COMPARE), default_timeout=180)
    for key, value in (params or {}).items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _want_metrics(a: stats.Dashboard, b: stats.Dashboard) -> dict[str, str]:
    out = {}
    for side, d in (("A", a), ("B", b)):
        for key, label in compare.KPIS:
            out[f"{side} · {label}"] = f"{d.kpis[key]:,}"
    return out


def _link_params(at: AppTest) -> dict[str, list[str]]:
    link = at.sidebar.code[0].value
    return parse_qs(urlsplit(link).query)


def test_compare_page_from_a_link_shows_both_sets(db):
    at = _page({"condition": "lung cancer", "status": "ANY", "b.condition": "diabetes", "b.phase": "PHASE3"})
    fa, fb = Filters(condition="lung cancer", status=()), Filters(condition="diabetes", phase=("PHASE3",))
    assert at.session_state["filters"] == fa and at.session_state["compare_b"] == fb
    assert _metrics(at) == _want_metrics(stats.dashboard(fa, db=db), stats.dashboard(fb, db=db))
    b_rec = next(m for m in at.metric if m.label == "B · Matching trials")
    diff = stats.dashboard(fb, db=db).kpis["matching_trials"] - stats.dashboard(fa, db=db).kpis["matching_trials"]
    assert b_rec.proto.delta == f"{diff:+,} vs A"
    titles = [json.loads(ch.proto.spec)["layout"]["title"]["text"] for ch in at.get("plotly_chart")]
    assert titles == ["How the filters narrow the trials", *(s.title for s in charts.CHARTS)]
    first = json.loads(at.get("plotly_chart")[1].proto.spec)  # phase
    assert [t["name"] for t in first["data"]] == ["A (sidebar)", "B (this page)"]
    assert not at.warning  # a clean link: no notices
    assert at.session_state["cmpb_condition"] == "diabetes" and at.session_state["cmpb_phase"] == ["PHASE3"]
    assert _link_params(at) == {"condition": ["lung cancer"], "status": ["ANY"], "b.condition": ["diabetes"],
                                "b.phase": ["PHASE3"]}
    assert inert.md_line(compare.b_words(fb)) in " ".join(c.value for c in at.sidebar.caption)
    assert [b.label for b in at.get("download_button")] == ["Comparison CSV", "Comparison JSON"]
    # What the bars show is part of the link too.
    at.segmented_control(key="compare_measure").set_value("share").run()
    assert _link_params(at)["bars"] == ["share"] and at.query_params.get("bars") == "share"
    again = _page({"condition": "lung cancer", "status": "ANY", "b.condition": "diabetes", "bars": "share"})
    assert again.segmented_control(key="compare_measure").value == "share"
    phase = json.loads(again.get("plotly_chart")[1].proto.spec)["data"][0]
    assert all(t.endswith("%") or t == "" for t in phase["text"])
    table = at.dataframe[0].value
    rows = compare.compare(fa, fb, stats.cached_dashboard).rows
    assert len(table) == len(rows) and list(table["Value"]) == [r.label for r in rows]


def test_compare_page_bad_b_params_give_notices(db):
    at = _page({"b.phase": "PHASE9", "b.nonsense": "1", "b.condition": "asthma", "bogus": "2", "bars": "pies"})
    (box,) = (w.value for w in at.warning)  # one box at the top: A's notices first, then B's and the bars'
    a_box, b_box = box.split("- " + inert.md_line("Filter set B:"), 1)
    assert a_box.endswith("- " + inert.md_line("Ignored unknown parameter “bogus”.") + "\n")  # A's notice, not B's
    assert "b.nonsense" not in a_box and "PHASE9" not in a_box
    b_box = "- " + inert.md_line("Filter set B:") + b_box
    assert "- " + inert.md_line("Filter set B: Ignored unknown parameter “b.nonsense”.") in b_box
    assert "- " + inert.md_line("Filter set B: Ignored phase: unknown value(s) PHASE9") in b_box
    assert "- " + inert.md_line("Ignored bars: “pies”.") in b_box
    assert at.segmented_control(key="compare_measure").value == "count"
    assert at.session_state["compare_b"] == Filters(condition="asthma")
    assert at.query_params.get("b.condition") == "asthma" and "b.nonsense" not in at.query_params
    assert "bars" not in at.query_params


def test_compare_page_b_edits_copy_swap_reset(db):
    at = _page({"country": "Japan"})
    assert at.session_state["compare_b"] == Filters()
    assert "A and B are the same" not in " ".join(i.value for i in at.info)
    at.text_input(key="cmpb_condition").set_value("asthma").run()
    at.multiselect(key="cmpb_status").set_value([]).run()
    assert not at.exception, at.exception
    fa, fb = Filters(country=("Japan",)), Filters(condition="asthma", status=())
    assert at.session_state["compare_b"] == fb
    assert at.query_params.get("b.condition") == "asthma" and at.query_params.get("b.status") == "ANY"
    assert _metrics(at) == _want_metrics(stats.dashboard(fa, db=db), stats.dashboard(fb, db=db))
    at.button(key="compare_swap").click().run()
    assert at.session_state["filters"] == fb and at.session_state["compare_b"] == fa
    assert at.sidebar.text_input(key="flt_condition").value == "asthma"
    assert at.multiselect(key="cmpb_country").value == ["Japan"]
    at.button(key="compare_copy").click().run()
    assert at.session_state["compare_b"] == fb and "A and B are the same" in " ".join(i.value for i in at.info)
    at.button(key="compare_reset").click().run()
    assert at.session_state["compare_b"] == Filters() and not any(k.startswith("b.") for k in at.query_params)
    at.segmented_control(key="compare_measure").set_value("share").run()
    phase = json.loads(at.get("plotly_chart")[1].proto.spec)
    want = compare.compare(at.session_state["filters"], Filters(), stats.cached_dashboard).section("phase")
    assert phase["data"][0]["text"] == [f"{100 * r.a_share:,.1f}%" if r.a_share is not None else "" for r in want]


def test_compare_page_patient_answers_stay_out_of_the_b_link(db):
    at = AppTest.from_file(str(PROJECT / COMPARE), default_timeout=180)
    at.run()
    from services.ui import state as ui_state

    # The assistant put a patient's age and sex into A; copying A to B must not put them into B's link either.
    at.session_state["patient_values"] = {"age": 62.0, "sex": "MALE"}
    at.session_state["filters"] = Filters(age=62.0, sex="MALE", country=("Japan",))
    at.session_state["widget_sync"] = None
    at.run()
    at.button(key="compare_copy").click().run()
    assert not at.exception, at.exception
    assert at.session_state["compare_b"].age == 62.0
    assert at.query_params.get("b.country") == "Japan"
    assert "b.age" not in at.query_params and "b.sex" not in at.query_params
    params = _link_params(at)
    assert "b.age" not in params and "age" not in params and params["b.country"] == ["Japan"]
    assert "leave out your answers" in " ".join(c.value for c in at.caption)
    assert ui_state.SHARE_PATIENT_KEY  # the opt-in is the same checkbox as A's


def test_bench_views_times_the_comparison_for_every_representative_filter(db):
    from devtools.bench import DASHBOARD_FILTERS
    from devtools.bench_views import bench_views

    result = bench_views(db, runs=1, names=["compare"])
    assert [(r["view"], r["filter"]) for r in result["rows"]] == [("compare", label) for label, _ in DASHBOARD_FILTERS]
    assert all(r["p50_s"] > 0 for r in result["rows"]), result["rows"]


def test_comparison_display_frame_says_unknown_and_signs_differences():
    a = stats.Dashboard(Filters(), {"matching_trials": 1200}, [], {"conditions": [
        {"value": "x", "label": "X", "count": 1000}]})
    b = stats.Dashboard(Filters(status=()), {"matching_trials": 1000}, [], {"conditions": [
        {"value": "y", "label": "Y", "count": 5}]})
    shown = compare.display_frame(compare.comparison_frame(compare.Comparison(a, b, compare.comparison_rows(a, b))))
    first = shown.iloc[0].to_dict()
    assert first == {"Section": "Key figures", "Value": "Matching trials", "A": "1,200", "A %": "—", "B": "1,000",
                     "B %": "—", "B − A": "-200", "B − A (pp)": "—", "Share of": ""}
    x = shown[shown["Value"] == "X"].iloc[0].to_dict()
    assert (x["A"], x["A %"], x["B"], x["B − A"]) == ("1,000", "83.3", "—", "—")


def test_compare_figure_in_shares_draws_no_bar_for_a_row_without_a_share():
    # Key figures in share mode: only "recruiting" has a share; the others keep their count on hover, with no bar
    # (a count drawn beside percentages on one axis would dwarf them); a section with no share at all draws counts.
    rows = [compare.Row("kpis", "Key figures", "matching_trials", "Matching trials", 400, 300, None, None, ""),
            compare.Row("kpis", "Key figures", "recruiting", "Recruiting", 100, 150, 0.25, 0.5, compare.SHARE_OF_KPI)]
    a, b = charts.compare_figure("Key figures", "hbar", rows, "share").data
    assert list(a.x) == [None, 25.0] and list(b.x) == [None, 50.0] and list(a.text) == ["", "25.0%"]
    assert "<b>400</b>" in a.customdata[0][1] and "<b>300</b>" in b.customdata[0][1]
    counts = charts.compare_figure("Key figures", "hbar", rows[:1], "share").data
    assert list(counts[0].x) == [400] and list(counts[1].x) == [300]


def test_compare_figure_leaves_room_for_the_longest_number():
    rows = [compare.Row("phase", "Phase", "PHASE2", "Phase 2", 3, 1, 1.0, 0.25, compare.SHARE_OF_MATCHING)]
    fig = charts.compare_figure("Phase", "hbar", rows, "share")
    assert list(fig.data[0].text) == ["100.0%"] and fig.layout.xaxis.range == (0, 100.0 * 1.18)
