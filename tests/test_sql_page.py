"""Tests for the SQL page: editor, examples, schema browser, parameters, limits, refusals and a real browser."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from devtools.commands.bench_load_cmd import free_port, streamlit_server
from services import console, limits
from services.errors import QueryTooHeavy
from services.ui import gate
from tests.test_console import MB, MEMORY_BOMB, TEMP_BOMB, server_watch


def _shown(markdown: str) -> str:
    """What a reader sees of Markdown whose untrusted parts went through services.inert (escapes removed)."""
    return re.sub(r"\\(.)", r"\1", markdown).replace("\u2060", "")

PROJECT = Path(__file__).resolve().parent.parent
PAGE = "app_pages/sql.py"
CHROMIUM = "/usr/bin/chromium"
SLOW = "SELECT count(*) FROM ctgov.facilities a, ctgov.facilities b, ctgov.facilities c"


def _page() -> AppTest:
    at = AppTest.from_file(str(PROJECT / PAGE), default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    return at


def _run(at: AppTest, sql: str | None = None, **params: str) -> AppTest:
    if sql is not None:
        at.text_area(key="sql_text").set_value(sql)
        at.run()
    for name, value in params.items():
        at.text_input(key=f"sql_param_{name}").set_value(value)
    next(b for b in at.button if b.label == "Run query").click()
    at.run()
    assert not at.exception, at.exception
    return at


def _captions(at: AppTest) -> list[str]:
    return [c.value for c in at.caption]


def test_sql_page_runs_the_starter_query_with_its_parameter(db, monkeypatch):
    monkeypatch.delenv("SQL_MAX_ROWS", raising=False)
    monkeypatch.delenv("SQL_TIMEOUT_MS", raising=False)
    at = _page()
    assert at.title[0].value == "🧮 SQL console"
    assert [t.label for t in at.text_input if t.key.startswith("sql_param_")] == [":status"]
    assert at.text_input(key="sql_param_status").value == "RECRUITING"
    assert any("at most 10,000 rows and 5 MB per result, 1 MB per value, 30 s per query (the whole query" in c
               and "one query at a time per visitor, 2 per server process" in c and "trial_reader" in c
               for c in _captions(at))
    _run(at)
    expected = console.run_query(at.text_area(key="sql_text").value, {"status": "RECRUITING"}, db=db)
    shown = at.dataframe[0].value
    assert shown.to_dict("list") == expected.frame().to_dict("list")
    assert at.subheader[0].value == f"Result · {len(expected.rows)} rows"
    assert any(c.endswith("as trial_reader · cap 10,000 rows · timeout 30 s") for c in _captions(at))
    assert [e.proto.label for e in at.get("download_button")] == ["Download CSV"]


def test_sql_page_loads_each_example(db):
    at = _page()
    examples = console.examples()
    assert at.selectbox(key="sql_example").options == [e.title for e in examples]
    for example in examples:
        at.selectbox(key="sql_example").set_value(example.name)
        at.run()
        assert at.text_area(key="sql_text").value == example.sql
        assert example.description in _captions(at)
    # The last example (top conditions) runs as loaded and shows the same rows as the service.
    _run(at)
    expected = console.run_query(examples[-1].sql, db=db)
    assert at.dataframe[0].value.to_dict("list") == expected.frame().to_dict("list")


def test_sql_page_example_with_parameter(db):
    at = _page()
    at.selectbox(key="sql_example").set_value("recruiting_sites_in_country")
    at.run()
    assert [t.label for t in at.text_input if t.key.startswith("sql_param_")] == [":country"]
    _run(at, country="France")
    example = {e.name: e for e in console.examples()}["recruiting_sites_in_country"]
    expected = console.run_query(example.sql, {"country": "France"}, db=db)
    assert expected.rows
    assert at.dataframe[0].value.to_dict("list") == expected.frame().to_dict("list")


def test_sql_page_parameter_inputs_follow_the_query(db):
    at = _page()
    at.text_area(key="sql_text").set_value(
        "SELECT nct_id FROM studies WHERE phase = :phase AND enrollment > :size AND phase <> ':not_me' "
        "ORDER BY nct_id LIMIT :n")
    at.run()
    assert [t.label for t in at.text_input if t.key.startswith("sql_param_")] == [":phase", ":size", ":n"]
    _run(at, phase="PHASE2", size="500", n="5")
    expected = db.fetch_rows("SELECT nct_id FROM ctgov.studies WHERE phase = 'PHASE2' AND enrollment > 500 "
                             "ORDER BY nct_id LIMIT 5")
    assert at.dataframe[0].value["nct_id"].tolist() == [r["nct_id"] for r in expected]
    _run(at, n="five")
    assert [_shown(e.value) for e in at.error] == ["**Not run.** The parameter :n needs a whole number, not 'five'."]
    assert len(at.dataframe) == 0


def test_sql_page_a_query_with_hundreds_of_parameters_draws_no_boxes(db):
    # A link's ?sql= may name thousands of :parameters: the page drew an input box for each (and ran the query).
    at = AppTest.from_file(str(PROJECT / PAGE), default_timeout=120)
    at.query_params["sql"] = "SELECT " + ", ".join(f":p{i}" for i in range(500))
    at.run()
    assert not at.exception, at.exception
    assert not [w for w in at.text_input if str(w.key).startswith("sql_param_")]
    assert any("names 500 parameters" in e.value for e in at.error)
    assert next(b for b in at.button if b.label == "Run query").disabled
    assert at.session_state["sql_result"] is None


def test_sql_page_a_long_unparsable_link_query_is_quoted_in_part(db):
    # A ?sql= with an unterminated 5,000-character string: the error repeated all of it after "at or near".
    at = AppTest.from_file(str(PROJECT / PAGE), default_timeout=120)
    at.query_params["sql"] = "SELECT nct_id\nFROM ctgov.studies\nWHERE brief_title = '" + "a" * 5000
    at.run()
    assert not at.exception, at.exception
    assert not [e for e in at.error if "cannot parse" in e.value]  # someone else's link: not run before a click
    _run(at)
    [error] = [e.value.replace("\\", "") for e in at.error if "cannot parse" in e.value]  # markdown escapes off
    assert "(line 3)" in error and "unterminated quoted string" in error, error
    assert "'" + "a" * 79 + "…" in error and "a" * 81 not in error and len(error) < 300, error


LINKED = "SELECT count(*) AS n FROM ctgov.studies WHERE phase = :phase"
WAITING = "This query came with a link and has not run: read it, then press **Run query**."


def _open_link(sql: str, **params: str) -> AppTest:
    at = AppTest.from_file(str(PROJECT / PAGE), default_timeout=120)
    at.query_params["sql"] = sql
    for name, value in params.items():
        at.query_params[f"sql.{name}"] = value
    at.run()
    assert not at.exception, at.exception
    return at


def _waiting(at: AppTest) -> bool:
    """The page shows a link's query without having run it."""
    return [i.value for i in at.info if "came with a link" in i.value] == [WAITING] and not at.dataframe \
        and at.session_state["sql_result"] is None


def test_sql_page_a_link_from_someone_else_shows_the_query_and_runs_it_on_a_click(db):
    # A shared /SQL?sql= link used to run as soon as a colleague opened it: a memory or disk bomb, at once.
    at = _open_link(LINKED, phase="PHASE2")
    assert at.text_area(key="sql_text").value == LINKED and at.text_input(key="sql_param_phase").value == "PHASE2"
    assert _waiting(at)
    at.run()  # any rerun before the click (a widget, a resize) does not run it either
    assert _waiting(at)
    _run(at)
    expected = db.fetch_value("SELECT count(*) FROM ctgov.studies WHERE phase = 'PHASE2'")
    assert at.dataframe[0].value["n"].tolist() == [expected] and expected > 0
    assert not [i for i in at.info if "came with a link" in i.value]


def test_sql_page_the_browser_that_ran_a_query_reopens_its_own_link_at_once(db, monkeypatch):
    me = limits.Visitor.from_values("browser one", "127.0.0.1")
    monkeypatch.setattr(gate, "visitor", lambda: me)
    at = _page()
    _run(at, LINKED, phase="PHASE3")
    expected = db.fetch_value("SELECT count(*) FROM ctgov.studies WHERE phase = 'PHASE3'")
    assert at.dataframe[0].value["n"].tolist() == [expected]
    # The same browser in a new session (a reload, its bookmark): the query it ran runs at once.
    again = _open_link(LINKED, phase="PHASE3")
    assert again.dataframe[0].value["n"].tolist() == [expected]
    assert not [i for i in again.info if "came with a link" in i.value]
    # Another value for the parameter is another query: it waits.
    assert _waiting(_open_link(LINKED, phase="PHASE1"))
    # Another browser opening the very same link waits for its own click.
    other = limits.Visitor.from_values("browser two", "127.0.0.1")
    monkeypatch.setattr(gate, "visitor", lambda: other)
    assert _waiting(_open_link(LINKED, phase="PHASE3"))


def test_sql_page_stops_the_memory_and_temp_file_bombs_with_a_clear_message(db, monkeypatch):
    if not console.protection(db).memory_watch:
        pytest.skip("the database server does not run on this machine: its processes cannot be measured")
    monkeypatch.setenv("SQL_MAX_MEMORY_MB", "150")
    monkeypatch.setenv("SQL_MAX_TEMP_MB", "100")
    at = _page()
    assert any("on the database server 150 MB of memory and 100 MB of temporary files per query, work_mem 4MB per "
               "sort or hash" in c for c in _captions(at))
    hint = QueryTooHeavy.hint
    with server_watch(db, "jsonb_agg(s)") as seen:
        _run(at, MEMORY_BOMB)
    [warning] = [_shown(w.value) for w in at.warning]
    assert re.fullmatch(r"\*\*Stopped\.\*\* The query took \d+ MB of the database server's memory, over the "
                        r"console's limit of 150 MB, and was stopped\. " + re.escape(hint), warning), warning
    assert not seen.safety_net and seen.peak_rss < 1024 * MB, seen
    with server_watch(db, "1e8", temp=True) as seen:
        _run(at, TEMP_BOMB)
    assert [_shown(w.value) for w in at.warning] == [
        "**Stopped.** The query needed more than 100 MB of temporary files on the database server, the console's "
        f"limit, and was stopped. {hint}"]
    assert not seen.safety_net and seen.peak_temp < 1024 * MB, seen
    assert len(at.dataframe) == 0
    _run(at, "SELECT count(*) AS trials FROM ctgov.studies")
    assert not at.warning and not at.error
    assert at.dataframe[0].value["trials"].tolist() == [db.fetch_value("SELECT count(*) FROM ctgov.studies")]


def test_sql_page_schema_browser(db):
    at = _page()
    tables = db.fetch_rows("SELECT c.table_name, count(*) AS n, bool_or(t.table_type = 'VIEW') AS is_view "
                           "FROM information_schema.columns c JOIN information_schema.tables t "
                           "ON t.table_schema = c.table_schema AND t.table_name = c.table_name "
                           "WHERE c.table_schema = 'ctgov' GROUP BY 1 ORDER BY 1")
    assert [e.label for e in at.sidebar.expander] == [
        f"{t['table_name']} · {t['n']} columns{' · view' if t['is_view'] else ''}" for t in tables]
    at.sidebar.text_input(key="sql_find").set_value("enrollment")
    at.run()
    found = [e.label.split(" · ")[0] for e in at.sidebar.expander]
    assert found == [r["table_name"] for r in db.fetch_rows(
        "SELECT DISTINCT table_name FROM information_schema.columns WHERE table_schema = 'ctgov' "
        "AND column_name LIKE '%enrollment%' ORDER BY 1")]
    assert "studies" in found


def test_sql_page_refuses_hostile_queries(db):
    at = _page()
    _run(at, "DROP TABLE ctgov.studies")
    assert [_shown(e.value) for e in at.error] == [
        "**Not run.** DROP is not allowed because it changes the database's schema, permissions or documentation; "
        "only a single SELECT query can run here."]
    _run(at, "SELECT * FROM app.sessions")
    assert [_shown(e.value) for e in at.error] == [
        "**Not run.** app.sessions is outside the trial data; the console reads the ctgov tables "
        "(and information_schema to look up columns)."]
    assert db.fetch_value("SELECT count(*) FROM ctgov.studies") > 0


def test_sql_page_timeout_is_reported_and_the_page_recovers(db, monkeypatch):
    monkeypatch.setenv("SQL_TIMEOUT_MS", "500")
    at = _page()
    assert any(" 0.5 s per query" in c for c in _captions(at))
    _run(at, "SELECT pg_sleep(30)")
    assert [_shown(e.value) for e in at.error] == [
        "**Not run.** pg_sleep() is not allowed because it pauses the server process and would hold a shared "
        "connection idle."]
    started = time.perf_counter()
    _run(at, SLOW)
    assert time.perf_counter() - started < 15
    assert [_shown(w.value) for w in at.warning] == [
        "**Stopped.** The query ran past the console's time limit of 0.5 s and was cancelled. Add a WHERE clause "
        "or a LIMIT, aggregate earlier, or check that every join has a join condition."]
    assert len(at.dataframe) == 0
    _run(at, "SELECT count(*) AS trials FROM ctgov.studies")
    assert not at.warning and not at.error
    assert at.dataframe[0].value["trials"].tolist() == [db.fetch_value("SELECT count(*) FROM ctgov.studies")]


def test_sql_page_cross_join_is_capped(db, monkeypatch):
    monkeypatch.setenv("SQL_MAX_ROWS", "2000")
    at = _page()
    _run(at, "SELECT a.nct_id, b.city, c.country FROM ctgov.facilities a, ctgov.facilities b, ctgov.facilities c")
    assert len(at.dataframe[0].value) == 2000
    assert [w.value for w in at.warning] == [
        "Only the first 2,000 rows are shown: the query has more. Add a LIMIT, a WHERE clause or an aggregate to "
        "see what matters."]
    assert at.subheader[0].value == "Result · 2,000 rows"


def test_sql_page_database_error_is_shown(db):
    at = _page()
    _run(at, "SELECT nct_id FROM ctgov.no_such_table")
    assert [_shown(e.value) for e in at.error] == [
        '**The database refused the query.** relation "ctgov.no_such_table" does not exist']


# ---- a real browser -----------------------------------------------------------------------------
@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists() and not shutil.which("chromium"),
                    reason="Debian's chromium is not installed (/usr/bin/chromium)")
def test_sql_page_in_chromium(db, tmp_path):
    from playwright.sync_api import sync_playwright

    port = free_port()
    with streamlit_server(port):
        countries = db.fetch_value("SELECT count(DISTINCT country) FROM ctgov.facilities")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium"),
                args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                      "--disable-component-update", "--disable-sync", "--no-first-run"])
            context = browser.new_context(viewport={"width": 1400, "height": 1600})
            page = context.new_page()
            page.goto(f"http://127.0.0.1:{port}/SQL", wait_until="networkidle")
            page.get_by_role("button", name="Run query").wait_for(timeout=90_000)
            page.locator(".st-key-sql_example [data-testid=stSelectbox] input").click()
            page.get_by_role("option", name="Sites per country").click()
            page.get_by_text("Number of trial sites and of distinct trials per country, largest first.", exact=True).wait_for(timeout=30_000)
            page.get_by_role("button", name="Run query").click()
            page.get_by_text(f"Result · {countries:,} rows").wait_for(timeout=60_000)
            page.get_by_role("button", name="Download CSV").wait_for(timeout=30_000)
            page.locator("[data-testid=stStatusWidget]").wait_for(state="detached", timeout=60_000)
            shot = tmp_path / "sql_page.png"
            page.screenshot(path=str(shot), full_page=True)
            assert page.get_by_text("Queries run as the database role trial_reader").count() == 1
            assert page.locator("[data-testid=stException]").count() == 0
            # The address bar is the query's link. This browser (its cookie) ran it: another tab runs it at once.
            link = page.url
            assert "sql=" in link
            own = context.new_page()
            own.goto(link, wait_until="networkidle")
            own.get_by_text(f"Result · {countries:,} rows").wait_for(timeout=60_000)
            assert own.get_by_text("came with a link").count() == 0
            # A colleague's browser shows the query and waits for a click.
            other = browser.new_page(viewport={"width": 1400, "height": 1600})
            other.goto(link, wait_until="networkidle")
            other.get_by_text("This query came with a link and has not run").wait_for(timeout=60_000)
            other.locator("[data-testid=stStatusWidget]").wait_for(state="detached", timeout=60_000)
            assert other.get_by_text("Result ·").count() == 0
            other.get_by_role("button", name="Run query").click()
            other.get_by_text(f"Result · {countries:,} rows").wait_for(timeout=60_000)
            browser.close()
        assert shot.stat().st_size > 20_000
