"""Links that reopen exactly the view: each kind of share link, opened in a fresh browser context, shows the same.

Map mode and layers, the Trials table's sort/page, a trial's details, a comparison and an SQL query with its
parameters: the view is set up in one context (partly by clicking), the sidebar's share link is read, and a fresh
context (no cookies, no session) opens it; headings, captions, chosen options and the query text must match.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devtools.commands.bench_load_cmd import stop_process
from tests.test_browser import ARGS, CHROMIUM, LOAD_TIMEOUT_MS, _env, _start_streamlit, exceptions, settle

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install -y chromium)"),
]
playwright_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed")

SIGNATURE_JS = """
() => {
  const outside = e => !e.closest('[data-testid="stSidebar"]');
  const texts = sel => [...document.querySelectorAll(sel)].filter(outside).map(e => e.innerText.trim());
  return {
    headings: texts('h1, h2, h3'),
    captions: texts('[data-testid="stCaptionContainer"]').filter(t => !/\\d+\\.\\d+ s · /.test(t)),
    chosen: [...document.querySelectorAll('input[type=radio]:checked, input[role=switch]:checked')]
      .filter(outside).map(e => (e.closest('label') || e.parentElement).innerText.trim()),
    queries: [...document.querySelectorAll('textarea')].filter(outside).map(e => e.value.trim()),
    tables: texts('[data-testid="stTable"]'),
  };
}
"""


@pytest.fixture(scope="module")
def app_url(db) -> Iterator[str]:  # noqa: ANN001 - the session database must exist before the server attaches
    proc, url, _ = _start_streamlit(_env())
    yield url
    stop_process(proc)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def _page(browser: Any) -> Any:
    pg = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    pg.set_default_timeout(LOAD_TIMEOUT_MS)
    return pg


def _share_link(pg: Any) -> str:
    code = pg.locator('[data-testid="stSidebar"] [data-testid="stCode"]').last
    return str(code.inner_text().strip())


def _signature(pg: Any) -> dict[str, Any]:
    return dict(pg.evaluate(SIGNATURE_JS), errors=exceptions(pg))


def _finished(pg: Any) -> None:
    """Wait until the view has been drawn to its end: every page ends in the data-source caption, and a loaded
    machine can pause a run between the sidebar's share link and that caption without showing "running"."""
    footer = pg.locator('[data-testid="stCaptionContainer"]').filter(has_text="Data: ClinicalTrials.gov")
    footer.last.wait_for(state="attached")
    settle(pg)


def _view(pg: Any) -> dict[str, Any]:
    """The finished view's signature, read once it holds still (two reads in a row agree)."""
    _finished(pg)
    before, deadline = _signature(pg), time.monotonic() + LOAD_TIMEOUT_MS / 1000
    while time.monotonic() < deadline:
        pg.wait_for_timeout(300)
        now = _signature(pg)
        if now == before:
            return now
        before = now
    return before


def _reopened(browser: Any, link: str, original: dict[str, Any], click_to_run: bool = False) -> dict[str, Any]:
    fresh = _page(browser)
    try:
        fresh.goto(link)
        _finished(fresh)
        if click_to_run:  # another browser's ?sql= link shows the query and runs it only on a click (issue 40)
            fresh.get_by_text("This query came with a link and has not run").wait_for()
            assert not [h for h in _signature(fresh)["headings"] if h.startswith("Result")]
            fresh.get_by_role("button", name="Run query").click()
            fresh.get_by_role("heading", name=re.compile(r"^Result")).wait_for()
            _finished(fresh)
        # Elements may still be arriving on a loaded machine: wait (bounded) until the view matches, else compare.
        deadline = time.monotonic() + LOAD_TIMEOUT_MS / 1000
        while _signature(fresh) != original and time.monotonic() < deadline:
            fresh.wait_for_timeout(250)
        return _signature(fresh)
    finally:
        fresh.context.close()


def _both(browser: Any, pg: Any, link: str, click_to_run: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    original = _view(pg)
    return original, _reopened(browser, link, original, click_to_run)


def test_view_links_reopen_each_kind_of_view_in_a_fresh_context(app_url: str, browser: Any, db: Any) -> None:
    kowa, other = "NCT05923281", db.fetch_value("SELECT min(nct_id) FROM ctgov.studies WHERE nct_id <> 'NCT05923281'")
    seen: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    pg = _page(browser)
    try:
        # Map: a choropleth by number of sites, set by clicking.
        pg.goto(app_url + "/Map?condition=diabetes&status=ANY")
        settle(pg)
        pg.get_by_text("Countries (choropleth)", exact=True).click()
        pg.wait_for_url(re.compile(r"map=countries"))
        settle(pg)
        pg.get_by_text("Number of sites", exact=True).click()
        pg.wait_for_url(re.compile(r"colour=sites"))
        settle(pg)
        link = _share_link(pg)
        assert "map=countries" in link and "colour=sites" in link
        seen["map"] = _both(browser, pg, link)

        # Trials: sorted by title, 25 rows a page, page 3 (typed into the page box).
        pg.goto(app_url + "/Trials?condition=diabetes&status=ANY&sort=title&rows=25")
        settle(pg)
        box = pg.get_by_label(re.compile(r"^Page \(of"))
        box.fill("3")
        box.press("Enter")
        pg.wait_for_url(re.compile(r"page=3"))
        settle(pg)
        link = _share_link(pg)
        assert all(p in link for p in ("sort=title", "rows=25", "page=3"))
        seen["trials"] = _both(browser, pg, link)
        assert any("showing 51–75" in c for c in seen["trials"][1]["captions"])

        # A trial's details, and a comparison.
        for name, path in (("detail", f"/Trials?nct={kowa}"), ("compare", f"/Trials?compare={kowa},{other}")):
            pg.goto(app_url + path)
            settle(pg)
            # Both views end in a table (the dates tab, the comparison): wait for it before reading the view.
            pg.locator('[data-testid="stTable"]').first.wait_for(state="attached")
            settle(pg)
            link = _share_link(pg)
            seen[name] = _both(browser, pg, link)

        # SQL: a query with a parameter, typed and run.
        pg.goto(app_url + "/SQL")
        settle(pg)
        query = pg.get_by_role("textbox", name="Query")
        query.fill("SELECT nct_id FROM ctgov.studies WHERE phase = :phase ORDER BY nct_id LIMIT 4")
        query.press("Control+Enter")
        settle(pg)
        phase = pg.get_by_role("textbox", name=":phase")
        phase.fill("PHASE3")
        phase.press("Enter")
        settle(pg)
        pg.get_by_role("button", name="Run query").click()
        pg.wait_for_url(re.compile(r"sql\.phase=PHASE3"))
        settle(pg)
        link = _share_link(pg)
        seen["sql"] = _both(browser, pg, link, click_to_run=True)
        assert "Result · 4 rows" in seen["sql"][1]["headings"]
    finally:
        pg.context.close()
    for name, (original, reopened) in seen.items():
        assert original == reopened, name
        assert original["errors"] == [] and (original["headings"] or original["captions"]), name
