"""Share links: patient answers stay out unless ticked in; the view (map mode, Trials sort/page, SQL) comes back."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
from streamlit.testing.v1 import AppTest

from services import inert
from services.assistant import ACTIVITY_LEVELS
from services.dashboard.filters import Filters

PAGES = Path(__file__).resolve().parent.parent / "app_pages"
ASSISTANT = str(PAGES / "assistant.py")
PATIENT_KEYS = {"condition", "age", "sex", "near", "radius", "unit"}


def _link_query(at: AppTest) -> dict[str, list[str]]:
    links = [c.value for c in at.sidebar.code if "?" in c.value or c.value.endswith("/")]
    assert links, [c.value for c in at.sidebar.code]
    return parse_qs(links[-1].split("?", 1)[1]) if "?" in links[-1] else {}


def _captions(at: AppTest) -> str:
    return " ".join(c.value for c in at.sidebar.caption)


def _guided_intake(at: AppTest) -> None:
    at.run()
    at.text_input(key="g_diagnosis").set_value("type 2 diabetes")
    at.number_input(key="g_age").set_value(55)
    at.radio(key="g_sex").set_value("female")
    at.text_input(key="g_location").set_value("Houston, TX")
    at.number_input(key="g_radius").set_value(100.0)
    at.selectbox(key="g_activity").set_value(next(iter(ACTIVITY_LEVELS)))
    next(b for b in at.button if b.label == "Save my answers and continue").click()
    at.run()
    assert not at.exception, at.exception


def test_share_link_leaves_guided_intake_answers_out_unless_ticked(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    at = AppTest.from_file(ASSISTANT, default_timeout=240)
    _guided_intake(at)
    answers = Filters(condition="type 2 diabetes", near="Houston, TX", radius=100.0, age=55.0, sex="FEMALE")
    assert at.session_state["filters"] == answers  # the dashboard shows the patient's landscape …

    query = _link_query(at)  # … but neither the link nor the address bar carries it
    assert not PATIENT_KEYS & set(query), query
    assert not PATIENT_KEYS & set(at.query_params), dict(at.query_params)
    text = " ".join(v for vs in query.values() for v in vs).lower()
    for private in ("diabetes", "houston", "55", "female"):
        assert private not in text
    captions = _captions(at)
    assert "Left out: your answers to the assistant" in captions
    for word in ("age", "sex", "diagnosis", "place"):
        assert word in captions.split("Left out:", 1)[1]

    # The same holds on another page of the same visit.
    at.switch_page(str(PAGES / "explore.py")).run()
    assert at.session_state["filters"] == answers
    assert not PATIENT_KEYS & set(_link_query(at))
    assert not PATIENT_KEYS & set(at.query_params)

    # Ticking the box puts them in, with a warning; unticking takes them out again.
    at.sidebar.checkbox(key="share_patient_answers").check().run()
    query = _link_query(at)
    assert Filters.from_query(query)[0] == answers
    assert {"condition", "age", "sex", "near"} <= set(at.query_params)
    assert any("holds your answers" in w.value for w in at.sidebar.warning)
    at.sidebar.checkbox(key="share_patient_answers").uncheck().run()
    assert not PATIENT_KEYS & set(_link_query(at))

    # A value the visitor types over is theirs, not the patient's: it goes into the link.
    at.sidebar.text_input(key="flt_condition").set_value("asthma").run()
    query = _link_query(at)
    assert query.get("condition") == ["asthma"]
    assert not {"age", "sex", "near"} & set(query)


def test_share_link_says_what_it_contains(db: Any) -> None:
    at = AppTest.from_file(str(PAGES / "explore.py"), default_timeout=240)
    at.query_params.update({"condition": "asthma", "phase": "PHASE2"})
    at.run()
    caption = next(c.value for c in at.sidebar.caption if "Copy share link" in c.value)
    assert inert.md_line("Condition: asthma") in caption and inert.md_line("Phase: Phase 2") in caption
    assert "Left out" not in _captions(at)
    assert not [c for c in at.sidebar.checkbox if c.key == "share_patient_answers"]


def test_share_link_reopens_map_mode_and_layers(db: Any) -> None:
    at = AppTest.from_file(str(PAGES / "map.py"), default_timeout=240)
    at.query_params.update({"country": "France"})
    at.run()
    at.radio(key="map_mode").set_value("countries").run()
    at.radio(key="map_metric").set_value("sites").run()
    at.toggle(key="map_only_area").set_value(False).run()
    query = _link_query(at)
    assert {k: query[k] for k in ("map", "colour", "area")} == {"map": ["countries"], "colour": ["sites"],
                                                                 "area": ["0"]}
    fresh = AppTest.from_file(str(PAGES / "map.py"), default_timeout=240)
    fresh.query_params.update({k: v[0] for k, v in query.items()})
    fresh.run()
    assert not fresh.exception and not fresh.warning
    assert (fresh.radio(key="map_mode").value, fresh.radio(key="map_metric").value,
            fresh.toggle(key="map_only_area").value) == ("countries", "sites", False)
    assert fresh.get("deck_gl_json_chart")[0].proto.json == at.get("deck_gl_json_chart")[0].proto.json


def test_share_link_reopens_trials_sort_and_page_and_keeps_them_across_a_detail_visit(db: Any) -> None:
    at = AppTest.from_file(str(PAGES / "trials.py"), default_timeout=240)
    at.query_params.update({"condition": "diabetes"})
    at.run()
    at.selectbox(key="trials_sort").set_value("title").run()
    at.selectbox(key="trials_size").set_value(25).run()
    at.number_input(key="trials_page").set_value(2).run()
    shown = at.dataframe[0].value["nct_id"].tolist()
    query = _link_query(at)
    assert {k: query[k] for k in ("sort", "rows", "page")} == {"sort": ["title"], "rows": ["25"], "page": ["2"]}

    # A visit to a trial's details and back keeps sort and page.
    at.query_params["nct"] = shown[0]
    at.run()
    assert at.header and "nct" in _link_query(at)
    next(b for b in at.button if b.key == "detail_back").click().run()
    assert (at.selectbox(key="trials_sort").value, at.number_input(key="trials_page").value) == ("title", 2)
    assert at.dataframe[0].value["nct_id"].tolist() == shown

    fresh = AppTest.from_file(str(PAGES / "trials.py"), default_timeout=240)
    fresh.query_params.update({k: v[0] for k, v in query.items()})
    fresh.run()
    assert not fresh.exception
    assert fresh.dataframe[0].value["nct_id"].tolist() == shown


def test_share_link_reopens_an_sql_query_with_its_parameters(db: Any) -> None:
    sql = "SELECT nct_id FROM ctgov.studies WHERE phase = :phase ORDER BY nct_id LIMIT :n"
    at = AppTest.from_file(str(PAGES / "sql.py"), default_timeout=240)
    at.query_params.update({"sql": sql, "sql.phase": "PHASE2", "sql.n": "3"})
    at.run()
    assert not at.exception and not at.warning
    # Someone else's link (issue 40) shows the query and its values but runs it only when Run query is pressed.
    assert not at.dataframe and any("has not run" in i.value for i in at.info)
    next(b for b in at.button if b.label == "Run query").click().run()
    assert not at.exception and not any("has not run" in i.value for i in at.info)
    expected = [r["nct_id"] for r in db.fetch_rows(
        "SELECT nct_id FROM ctgov.studies WHERE phase = 'PHASE2' ORDER BY nct_id LIMIT 3")]
    assert at.dataframe[0].value["nct_id"].tolist() == expected  # the link's query with the link's values
    query = _link_query(at)
    assert (query["sql"], query["sql.phase"], query["sql.n"]) == ([sql], ["PHASE2"], ["3"])
    at.text_input(key="sql_param_n").set_value("5").run()
    assert _link_query(at)["sql.n"] == ["5"]


@pytest.mark.parametrize(("page", "param", "value"), [
    ("map.py", "map", "globe"), ("trials.py", "sort", "zzz"), ("timeline.py", "colour_by", "rainbow"),
    ("sites.py", "rank", "best"), ("compare.py", "bars", "pies")])
def test_share_link_a_view_setting_that_is_not_used_is_said_on_the_page_it_opens(
        db: Any, page: str, param: str, value: str) -> None:
    # A link's view setting that a page cannot use was dropped without a word on Map, Trials, Timeline and Sites:
    # its notice was queued after the page had shown its notices, so it appeared on the next page visited instead.
    at = AppTest.from_file(str(PAGES / page), default_timeout=240)
    at.query_params.update({param: value})
    at.run()
    assert not at.exception
    warnings = " ".join(w.value for w in at.warning)
    assert inert.md_line(f"Ignored {param}: “{value}”.") in warnings
    at.run()  # shown once
    assert inert.md_line(f"Ignored {param}") not in " ".join(w.value for w in at.warning)


def test_share_link_an_sql_query_longer_than_the_console_takes_is_refused_not_cut_and_run(db: Any) -> None:
    # A link's query longer than the console's limit was cut to the limit and run: the cut query is another query
    # (here its last condition was lost, so it counted every study), and nothing said so.
    from services import console

    head = "SELECT count(*) AS n FROM ctgov.studies WHERE true "
    sql = head + " " * (console.MAX_CHARS - len(head)) + "AND phase = 'PHASE9'"
    at = AppTest.from_file(str(PAGES / "sql.py"), default_timeout=240)
    at.query_params.update({"sql": sql})
    at.run()
    assert not at.exception
    assert not at.dataframe  # nothing ran
    assert at.text_area(key="sql_text").value != sql[:console.MAX_CHARS]
    warnings = " ".join(w.value for w in at.warning)
    assert inert.md_line(f"Ignored sql: it is longer than {console.MAX_CHARS:,} characters.") in warnings


def test_share_link_a_sites_place_longer_than_a_place_is_refused_with_a_notice(db: Any) -> None:
    # ?from= of any length was cut to 200 characters without a word and looked up as a place.
    at = AppTest.from_file(str(PAGES / "sites.py"), default_timeout=240)
    at.query_params.update({"from": "Boston " * 100})
    at.run()
    assert not at.exception
    assert at.text_input(key="sites_from").value == ""
    warnings = " ".join(w.value for w in at.warning)
    assert inert.md_line("Ignored from: it is longer than 200 characters.") in warnings


def test_no_filter_parameter_shares_its_name_with_a_view_parameter() -> None:
    # The therapeutic-area filter was "area", the Map's "only in the area" setting too: a shared map link
    # with area=0 came back with a warning that "0" is not a therapeutic area.
    from services.dashboard import filters

    assert not set(filters.PARAMS) & filters.VIEW_PARAMS
