"""The Explore page under AppTest: charts and KPIs, filters kept across pages, URL parameters, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from streamlit.testing.v1 import AppTest

from services import inert
from services.dashboard import charts, filters, stats
from services.dashboard.filters import Filters
from services.ui import state as ui_state

PROJECT = Path(__file__).resolve().parent.parent
EXPLORE = "app_pages/explore.py"


def _app(params: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(str(PROJECT / "navigation.py"), default_timeout=120)
    for key, value in (params or {}).items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def _explore(params: dict[str, str] | None = None) -> AppTest:
    """Open Explore the way a share link does: the URL parameters are read on the session's first run."""
    at = AppTest.from_file(str(PROJECT / EXPLORE), default_timeout=120)
    for key, value in (params or {}).items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def _kpis(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _want_kpis(d: stats.Dashboard) -> dict[str, str]:
    k = d.kpis
    return {"Matching trials": f"{k['matching_trials']:,}", "Recruiting now": f"{k['recruiting']:,}",
            "Sites": f"{k['sites']:,}", "Countries": f"{k['countries']:,}",
            "Planned enrollment": f"{k['planned_enrollment']:,}"}


def _chart_titles(at: AppTest) -> list[str]:
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    return [s["layout"]["title"]["text"] for s in specs]


def test_explore_page_shows_kpis_funnel_and_every_chart(db):
    at = _explore()
    f = at.session_state["filters"]
    assert f == Filters()
    d = stats.dashboard(f, db=db)
    assert _kpis(at) == _want_kpis(d)
    assert _chart_titles(at) == ["How the filters narrow the trials", *(c.title for c in charts.CHARTS)]
    phase = json.loads(at.get("plotly_chart")[1].proto.spec)["data"][0]
    assert phase["x"] == [r["count"] for r in d.facets["phase"]]
    assert [c[0] for c in phase["customdata"]] == [r["value"] for r in d.facets["phase"]]
    captions = " ".join(c.value for c in at.caption)
    assert "at most 100,000 rows" in captions
    assert "Data: ClinicalTrials.gov via AACT" in captions  # the footer: source and freshness
    assert [b.label for b in at.get("download_button")] == ["CSV", "JSON"]


def test_explore_filters_survive_a_page_switch(db):
    at = _app()
    at.switch_page(EXPLORE).run()
    at.sidebar.text_input(key="flt_condition").set_value("diabetes").run()
    at.sidebar.multiselect(key="flt_phase").set_value(["PHASE3"]).run()
    assert not at.exception, at.exception
    want = Filters(condition="diabetes", phase=("PHASE3",))
    assert at.session_state["filters"] == want
    kpis = _kpis(at)
    assert kpis == _want_kpis(stats.dashboard(want, db=db))
    for page in ("app_pages/data.py", "home.py", EXPLORE):
        at.switch_page(page).run()
        assert not at.exception, at.exception
        assert at.session_state["filters"] == want
        assert at.query_params["condition"] == "diabetes" and at.query_params["phase"] == "PHASE3"
    assert at.sidebar.text_input(key="flt_condition").value == "diabetes"
    assert at.sidebar.multiselect(key="flt_phase").value == ["PHASE3"]
    assert _kpis(at) == kpis


def test_explore_url_parameters_set_the_filters(db):
    params = {"condition": "lung cancer", "phase": "PHASE2", "near": "Boston, MA", "radius": "300", "age": "62",
              "sex": "female", "status": "ANY"}
    at = _explore(params)
    want, notices = Filters.from_query(params)
    assert notices == []
    assert at.session_state["filters"] == want
    assert at.sidebar.text_input(key="flt_condition").value == "lung cancer"
    assert at.sidebar.text_input(key="flt_near").value == "Boston, MA"
    assert at.sidebar.number_input(key="flt_radius").value == 300.0
    assert at.sidebar.number_input(key="flt_age").value == 62.0
    assert at.sidebar.selectbox(key="flt_sex").value == "FEMALE"
    assert _kpis(at) == _want_kpis(stats.dashboard(want, db=db))
    assert not at.warning


def test_explore_share_link_reproduces_the_view(db):
    at = _explore()
    at.sidebar.text_input(key="flt_condition").set_value("alzheimer").run()
    at.sidebar.multiselect(key="flt_status").set_value(["RECRUITING", "COMPLETED"]).run()
    link = at.sidebar.code[0].value
    query = link.split("?", 1)[1]
    assert parse_qs(query) == {"condition": ["alzheimer"], "status": ["RECRUITING", "COMPLETED"]}
    fresh = _explore({k: v[0] if len(v) == 1 else v for k, v in parse_qs(query).items()})
    assert fresh.session_state["filters"] == at.session_state["filters"]
    assert _kpis(fresh) == _kpis(at)
    assert _chart_titles(fresh) == _chart_titles(at)


HOSTILE = ["'; DROP TABLE ctgov.studies; --", "Ünïcödé 肺癌 🧬 \" OR 1=1 --", "100% _under\\score_ $1 :param"]


@pytest.mark.parametrize("field", ["condition", "intervention", "sponsor", "near", "country", "state"])
def test_explore_hostile_text_in_every_field_is_harmless(db, field):
    for text in HOSTILE:
        at = _explore({field: text, "status": "ANY"})
        f, notices = Filters.from_query({field: text, "status": "ANY"})
        assert at.session_state["filters"] == f
        warnings = " ".join(w.value for w in at.warning)
        for notice in notices:
            assert inert.md_line(notice) in warnings
        assert len(at.get("plotly_chart")) == len(charts.CHARTS) + 1
        assert _kpis(at) == _want_kpis(stats.dashboard(f, db=db))
    assert db.fetch_value("SELECT count(*) FROM ctgov.studies") > 10_000


def test_explore_malformed_parameters_give_notices_not_errors(db):
    params = {"radius": "-5", "phase": "PHASE9", "age": "abc", "condition": "x" * 10_000, "near": "Boston, MA",
              "start_from": "20x5", "results": "maybe", "color": "red"}
    at = _explore(params)
    f, notices = Filters.from_query(params)
    assert len(notices) == 7
    assert at.session_state["filters"] == f == Filters(near="Boston, MA")
    text = " ".join(w.value for w in at.warning)
    for notice in notices:
        assert inert.md_line(notice) in text
    assert "radius" in text and "PHASE9" in text and "not a number" in text and "longer than 200" in text
    assert _kpis(at) == _want_kpis(stats.dashboard(f, db=db))
    at.run()  # notices are shown once, then the page is quiet
    assert not at.warning


def test_explore_a_link_with_hundreds_of_unknown_parameters_lists_a_few(db):
    # Each unknown parameter was a notice; the warning listed every one (Streamlit reads up to 999 parameters).
    # Now the first few are named and the rest counted (filters.MAX_UNKNOWN_NOTICES, the one cap). A second cap on
    # the warning (12 lines) hid what mattered: with 11 or more unknown parameters, the notices for the filter values
    # that were dropped — the ones that change the numbers — were left out as "… and 4 more."
    bad = {"radius": "-5", "phase": "PHASE9", "age": "abc", "start_from": "20x5", "results": "maybe"}
    params = {**{f"x{i}": "1" for i in range(900)}, **bad}
    at = _explore(params)
    notices = Filters.from_query(params)[1]
    assert len(notices) == filters.MAX_UNKNOWN_NOTICES + 1 + len(bad)
    assert notices[filters.MAX_UNKNOWN_NOTICES] == f"Ignored {900 - filters.MAX_UNKNOWN_NOTICES:,} more unknown parameters."
    (warning,) = at.warning
    lines = warning.value.split("\n\n", 1)[1].split("\n")
    assert lines == ["- " + inert.md_line(n) for n in notices]
    for key in bad:
        assert sum(line.startswith("- " + inert.md_line(f"Ignored {key}:")) for line in lines) == 1


def test_explore_no_match_explains_empty_charts(db):
    # No MeSH term in it ("disease" alone is the heading Disease) and no condition name with its words.
    at = _explore({"condition": "xyzzy quux anywhere", "status": "ANY"})
    assert _kpis(at)["Matching trials"] == "0"
    assert any("No trial matches these filters" in i.value for i in at.info)
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")[1:]]
    assert [s["layout"]["annotations"][0]["text"] for s in specs] == [c.empty for c in charts.CHARTS]


def test_explore_export_holds_exactly_the_matching_trials(db):
    from services.dashboard import export
    from services.dashboard.search import EXPORT_CAP, count_trials, matching_trials

    f, _ = Filters.from_query({"near": "Boston, MA", "radius": "100", "status": "ANY"})
    n = stats.dashboard(f, db=db).kpis["matching_trials"]
    df = matching_trials(f, limit=EXPORT_CAP, db=db)
    assert len(df) == n == count_trials(f, db=db) > 0
    assert df["nearest_miles"].max() <= 100  # the nearest-site column never widens the place filter
    csv_lines = export.to_bytes(df, "csv").decode("utf-8").strip().splitlines()
    assert csv_lines[0].split(",")[:4] == ["nct_id", "title", "phase", "status"]
    rows = json.loads(export.to_bytes(df, "json"))
    assert sorted(r["nct_id"] for r in rows) == sorted(df["nct_id"])


def test_explore_sidebar_offers_the_share_link(db):
    at = _explore({"condition": "diabetes"})
    assert any("Copy share link" in c.value for c in at.sidebar.caption)
    assert at.sidebar.code[0].value.endswith("?condition=diabetes")


def test_explore_timed_out_facet_says_so_and_the_rest_renders(db, monkeypatch):
    real = stats.dashboard

    def one_facet_times_out(f, **kwargs):  # noqa: ANN001, ANN202 - same signature as stats.dashboard
        d = real(f, **kwargs)
        d.facets.pop("conditions", None)
        d.errors["conditions"] = "timed out"
        return d

    monkeypatch.setattr(stats, "dashboard", one_facet_times_out)
    ui_state.clear_cache()  # another test in this process may have drawn the same view: it must be computed here
    at = _explore({"condition": "asthma", "status": "ANY"})
    warnings = [w.value for w in at.warning]
    assert any("Top conditions" in w for w in warnings)  # the banner names what is missing
    assert "timed out — this chart could not be computed; the others are complete." in warnings
    assert _chart_titles(at) == ["How the filters narrow the trials",
                                 *(c.title for c in charts.CHARTS if c.facet != "conditions")]
    assert [b.label for b in at.button if b.label == "Try those again"] == ["Try those again"]
    monkeypatch.setattr(stats, "dashboard", real)
    at.button(key="explore_retry").click().run()  # failed dashboards are not cached: a retry recomputes
    assert not [w for w in at.warning if "timed out" in w.value]
    assert len(at.get("plotly_chart")) == len(charts.CHARTS) + 1


@pytest.mark.parametrize(("params", "section"), [
    ({"country": "France"}, "Place"), ({"state": "Texas"}, "Place"), ({"healthy": "yes"}, "Patient"),
    ({"start_from": "2020"}, "Study design"), ({"enroll_min": "100"}, "Study design"),
    ({"results": "yes"}, "Study design"), ({"fda": "no"}, "Study design")])
def test_explore_a_sidebar_section_with_a_filter_set_opens(db, params, section):
    # The Place section stayed closed with a country or state chosen (it opened for "Near" only), Patient for
    # "Healthy volunteers", Study design for start years, enrollment, results posted and FDA-regulated: a link's
    # filter was in force but hidden in a closed section, and pages without a filter line (Trials, Map) did not say it.
    at = _explore(params)
    opened = {e.label: e.proto.expanded for e in at.sidebar.expander if e.label in ("Place", "Patient", "Study design")}
    assert opened == {name: name == section for name in ("Place", "Patient", "Study design")}


def test_explore_sidebar_numbers_read_as_typed_whole_numbers_without_decimals(db):
    # The sidebar showed Age "55.00" and Radius "60.00"; a value typed with decimals still shows them.
    for age, radius, shown in (("55", "60", ("55", "60")), ("62.5", "60.5", ("62.5", "60.5"))):
        at = _explore({"condition": "asthma", "near": "Boston, MA", "age": age, "radius": radius})
        assert not at.exception, at.exception
        widgets = [at.sidebar.number_input(key=k) for k in ("flt_age", "flt_radius")]
        assert tuple(w.format % w.value for w in widgets) == shown
    # With a precision: the browser's sprintf prints a bare %g in full (62.13711922373339 for 100 km in miles).
    assert all(w.format.startswith("%.") and w.format % (100 / 1.609344) == "62.1371" for w in widgets)
