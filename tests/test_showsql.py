"""'Show the SQL': each KPI's, the funnel's and every chart's SQL passes the console's guard and, run through
the console (services/console.run_query, the SQL page's path), returns the page's numbers on the sample."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from services import console
from services.dashboard import charts, showsql, stats
from services.dashboard.filters import Filters
from services.data import studymesh

PROJECT = Path(__file__).resolve().parent.parent
# Three filters over different FILTER_DEFS: default status, phase + country + start years, funder + place.
FILTERS = {
    "default": {},
    "phase_country_years": {"phase": "PHASE2", "country": "United States", "start_from": "2015",
                            "start_to": "2024", "status": "ANY"},
    "sponsor_near_enroll": {"funder": "INDUSTRY", "near": "Boston, MA", "radius": "300", "enroll_min": "20"},
    # a condition and a therapeutic area: the page matches them on app.study_mesh, the shown SQL on its view
    "condition_area": {"condition": "lung cancer", "therapeutic_area": "Oncology", "status": "ANY"},
}


def _filters(query: dict[str, str]) -> Filters:
    f, notices = Filters.from_query(query)
    assert not notices, notices
    return f


def _run(sql: str) -> Any:
    result = console.run_query(sql, {}, max_rows=10_000)
    assert not result.truncated
    return result.frame()


@pytest.fixture(scope="module", params=sorted(FILTERS))
def case(request: pytest.FixtureRequest, db: Any
         ) -> tuple[Filters, stats.Dashboard, dict[str, showsql.ShownSql]]:
    f = _filters(FILTERS[request.param])
    return f, stats.dashboard(f, db=db), showsql.dashboard_sql(f)


def test_showsql_every_query_passes_the_console_guard(case: Any) -> None:
    _, _, shown = case
    assert set(shown) == {showsql.KPIS, showsql.FUNNEL, *stats.FACETS}
    for item in shown.values():
        checked = console.check(item.sql)
        assert checked.parameters == ()  # every value written out: nothing to type in
        assert all(t.startswith("ctgov.") for t in checked.tables), checked.tables
        assert item.sql.startswith("-- Trial Landscape: ")
    # The MeSH charts read the app's MeSH mapping through its ctgov views, as the page counts them.
    assert {t for name in showsql.VOCABULARY_FACETS for t in console.check(shown[name].sql).tables} >= {
        "ctgov.study_mesh_terms", "ctgov.therapeutic_area_terms"}


def test_showsql_kpis_return_the_page_kpis(case: Any) -> None:
    _, dash, shown = case
    frame = _run(shown[showsql.KPIS].sql)
    assert {k: int(v) for k, v in frame.iloc[0].items()} == dash.kpis


def test_showsql_funnel_returns_the_page_funnel(case: Any) -> None:
    _, dash, shown = case
    row = _run(shown[showsql.FUNNEL].sql).iloc[0]
    assert [int(row[stage["key"]]) for stage in dash.funnel] == [stage["count"] for stage in dash.funnel]


@pytest.mark.parametrize("facet", sorted(stats.FACETS))
def test_showsql_facet_returns_the_chart_numbers(case: Any, facet: str) -> None:
    """The console's rows, shaped as the page shapes SQL rows (stats.shape_facet), are the chart's rows:
    every facet, the MeSH conditions and therapeutic areas included."""
    _, dash, shown = case
    frame = _run(shown[facet].sql)
    assert stats.shape_facet(facet, frame) == dash.facets[facet]
    if facet in showsql.VOCABULARY_FACETS:  # the sample has trials in both MeSH charts under every case
        assert dash.facets[facet]
    if dash.facets[facet]:
        assert sum(int(n) for n in frame["n"]) > 0


def test_showsql_mesh_charts_fall_back_to_a_note_without_the_mesh_mapping(monkeypatch: Any) -> None:
    """A database without app.study_mesh (a read-only AACT): the MeSH charts' SQL would carry the vocabulary
    itself, so they show the note and no SQL; every other number keeps its SQL."""
    monkeypatch.setattr(studymesh, "built", lambda: False)
    monkeypatch.setattr(studymesh, "stored", lambda: False)
    shown = showsql.dashboard_sql(_filters({}))
    assert {n for n, item in shown.items() if not item.sql} == set(showsql.VOCABULARY_FACETS)
    assert all(shown[n].note == showsql.VOCABULARY_NOTE for n in showsql.VOCABULARY_FACETS)


def test_showsql_names_the_filters_and_counts_a_condition_as_the_page(db: Any) -> None:
    f = _filters({"condition": "breast cancer", "status": "ANY"})
    shown = showsql.dashboard_sql(f)
    kpis = shown[showsql.KPIS]
    assert "-- Filters: Condition: breast cancer · Status: any" in kpis.sql
    assert "app." not in kpis.sql
    base = int(_run(kpis.sql).iloc[0]["matching_trials"])
    page = stats.dashboard(f, db=db).kpis["matching_trials"]
    # the shown filter reads ctgov.study_mesh_terms where the page reads app.study_mesh: the same trials
    assert 0 < base == page and "app.study_mesh" not in kpis.note
    assert ("ctgov.study_mesh_terms" in kpis.sql) == studymesh.stored()
    assert "combined phase" in shown["phase"].note


def test_showsql_explore_page_shows_the_sql_under_every_number_and_downloads_images(db: Any) -> None:
    """Explore: a "Show the SQL" expander under the KPIs, the funnel and each chart with that number's SQL;
    every chart's only toolbar button is Plotly's toImage, PNG by default, SVG when chosen, the filters under
    its title."""
    at = AppTest.from_file(str(PROJECT / "app_pages/explore.py"), default_timeout=120)
    at.query_params["phase"] = "PHASE2"
    at.run()
    assert not at.exception, at.exception
    f = at.session_state["filters"]
    shown = showsql.dashboard_sql(f)
    expanders = [e for e in at.main.expander if e.label == "Show the SQL"]
    assert len(expanders) == 2 + len(stats.FACETS)
    codes = [c.value for e in expanders for c in e.code]
    order = [showsql.KPIS, showsql.FUNNEL, *(c.facet for c in charts.CHARTS)]
    assert codes == [shown[name].sql for name in order]  # the MeSH charts' too
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    configs = [json.loads(c.proto.config) for c in at.get("plotly_chart")]
    assert len(specs) == 1 + len(charts.CHARTS)
    assert all(c["modeBarButtons"] == [["toImage"]] and c["toImageButtonOptions"]["format"] == "png"
               for c in configs)
    assert all("Phase: Phase 2" in s["layout"]["title"]["subtitle"]["text"] for s in specs)
    at.segmented_control(key="explore_image_format").set_value("svg").run()
    configs = [json.loads(c.proto.config) for c in at.get("plotly_chart")]
    assert {c["toImageButtonOptions"]["format"] for c in configs} == {"svg"}
    assert configs[1]["toImageButtonOptions"]["filename"] == f"trial-landscape-{charts.CHARTS[0].facet}"
