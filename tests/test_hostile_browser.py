"""A hostile study and hostile links in a real browser: no page and no report makes a request to another origin.

A study whose every free-text field carries script tags, Markdown images and links, `javascript:` links, CSS, SVG,
Plotly pseudo-HTML, bare URLs and very long text is imported into a small database of this test's own. Chromium
opens every page on it (Home, Explore, Map, Trials list + detail + compare, Assistant guided cards and report, SQL,
Data) and a set of crafted links (Markdown in filter values and in a parameter's name) with every request to
another origin intercepted (context.route) and logged; the report is also printed to PDF by the app's own engine
while a local beacon (the outside address in the hostile text) listens. Only ClinicalTrials.gov links may be
clickable.
"""

from __future__ import annotations

import shutil
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest

from devtools.commands.bench_load_cmd import stop_process
from tests import hostile
from tests.test_browser import ARGS, CHROMIUM, LOAD_TIMEOUT_MS, _env, _start_streamlit, exceptions, settle

PROJECT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install -y chromium)"),
]
playwright_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed")


# ---- an outside origin that logs every hit -----------------------------------------------------------
@dataclass
class Beacon:
    """A local HTTP server on another origin: the address every hostile payload points at."""

    hits: list[str] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"


@pytest.fixture(scope="module")
def beacon() -> Iterator[Beacon]:
    found = Beacon()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature is fixed
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server naming
            found.hits.append(self.path)
            self.send_response(204)
            self.end_headers()

    found.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=found.server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield found
    found.server.shutdown()
    found.server.server_close()


# ---- the hostile database, sessions and server --------------------------------------------------------
@dataclass
class HostileApp:
    url: str
    cards_token: str
    report_token: str
    report_html: str
    other_nct: str


@pytest.fixture(scope="module")
def hostile_app(db, beacon: Beacon) -> Iterator[HostileApp]:  # noqa: ANN001 - the session database must exist
    from services.assistant import AssistantSession
    from services.assistant.backend import DatabaseBackend
    from services.assistant.guided import GuidedAssistant, IntakeForm
    from services.assistant.store import SessionStore
    from services.data.db import Database
    from services.data.loaders import import_ctgov_json
    from tests import scratch_server
    from tests.conftest import TEST_DATA_DIR

    data_dir = TEST_DATA_DIR / f"hostile-{uuid.uuid4().hex[:8]}"  # inside the run's folder: removed with it
    proc = None
    try:
        url_db = scratch_server.prepare(data_dir, studies=40)
        scratch = Database(url_db, label="hostile")
        try:
            import_ctgov_json(scratch, hostile.write_record(data_dir / "hostile.jsonl", beacon.url))
            other = scratch.fetch_value("SELECT min(nct_id) FROM ctgov.studies WHERE nct_id <> :n",
                                        {"n": hostile.HOSTILE_NCT})
            guided = GuidedAssistant(DatabaseBackend(scratch))
            store = SessionStore(scratch)
            session = AssistantSession()
            guided.submit_intake(session, IntakeForm(diagnosis=f"{hostile.MARK} plain condition", age=50,
                                                     sex="female", location="Boston, MA", travel_radius_miles=50.0))
            guided.run_search(session)
            guided.run_matching(session)
            assert hostile.HOSTILE_NCT in [m["nct_id"] for m in session.matched_trials]
            store.save(session)
            later = AssistantSession.from_json(session.to_json())
            later.id = AssistantSession().id
            guided.select(later, [hostile.HOSTILE_NCT])
            guided.make_report(later)
            assert later.report_html
            store.save(later)
        finally:
            scratch.close()
        proc, url, _ = _start_streamlit(_env(DATABASE_URL=url_db, TRIAL_LANDSCAPE_DATA_DIR=str(data_dir)))
        yield HostileApp(url, session.id, later.id, later.report_html or "", str(other))
    finally:
        if proc is not None:
            stop_process(proc)
        scratch_server.release(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)


@dataclass
class Watched:
    page: Any
    outside: list[str]


@pytest.fixture()
def watched(hostile_app: HostileApp) -> Iterator[Watched]:
    """A fresh browser whose requests to any other origin are logged and refused."""
    origin = hostile_app.url
    outside: list[str] = []

    def route(r: Any) -> None:
        target = r.request.url
        if target.startswith((origin + "/", "data:", "blob:")) or target == origin:
            r.continue_()
        else:
            outside.append(target)
            r.abort()

    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.route("**/*", route)
        page = context.new_page()
        page.set_default_timeout(LOAD_TIMEOUT_MS)
        try:
            yield Watched(page, outside)
        finally:
            context.close()
            browser.close()


def _outside_links(pg: Any, origin: str) -> list[str]:
    """Links to anywhere but this app and ClinicalTrials.gov. The one link let through is the map library's own logo
    while it is not displayed (mapbox-gl keeps it in the DOM, hidden unless a basemap source needs it): it cannot be
    clicked and fetches nothing."""
    hrefs = pg.eval_on_selector_all(
        "a[href]", "els => els.filter(e => !(e.matches('a.mapboxgl-ctrl-logo') && !e.checkVisibility()))"
                   ".map(e => e.href)")
    here = pg.url.split("#", 1)[0]
    return [h for h in hrefs if not (h.startswith((origin + "/", "https://clinicaltrials.gov/")) or h == origin
                                     or h.split("#", 1)[0] == here)]


def _visit(w: Watched, app: HostileApp, path: str, expect_text: str | None = None) -> dict[str, Any]:
    w.page.goto(app.url + path)
    settle(w.page)
    if path.startswith("/SQL?"):  # a query link runs only on a click in a browser that did not run it itself
        w.page.get_by_role("button", name="Run query").click()
        settle(w.page)
    if expect_text is not None:  # the hostile text is really on the page (as plain text)
        playwright_api.expect(w.page.get_by_text(expect_text).first).to_be_attached(timeout=LOAD_TIMEOUT_MS)
    return {"outside": list(w.outside), "links": _outside_links(w.page, app.url), "errors": exceptions(w.page)}


def _clean() -> dict[str, Any]:
    return {"outside": [], "links": [], "errors": []}


# ---- tests ------------------------------------------------------------------------------------------------
def test_hostile_study_on_every_page_fetches_nothing_outside(watched: Watched, hostile_app: HostileApp,
                                                             beacon: Beacon) -> None:
    app, mark = hostile_app, hostile.MARK
    where = f"condition={mark}&status=ANY"
    pages = {
        "home": ("/", None),
        "explore": (f"/Explore?{where}", None),
        "map": (f"/Map?{where}", None),
        "map countries": (f"/Map?{where}&map=countries", None),
        "trials": (f"/Trials?{where}", None),
        "detail": (f"/Trials?nct={hostile.HOSTILE_NCT}", f"{mark} title"),
        "compare": (f"/Trials?compare={hostile.HOSTILE_NCT},{app.other_nct}", f"{mark} title"),
        "assistant cards": (f"/Assistant?session={app.cards_token}", f"{mark} title"),
        "assistant report": (f"/Assistant?session={app.report_token}", None),
        "sql": ("/SQL?sql=" + quote(f"SELECT brief_title, official_title FROM ctgov.studies WHERE nct_id = "
                                    f"'{hostile.HOSTILE_NCT}'"), None),
        "sql error": ("/SQL?sql=" + quote(f'SELECT * FROM "![x]({beacon.url}/sqlerr.png)"'), "does not exist"),
        "data": ("/Data", None),
    }
    seen = {}
    for name, (path, text) in pages.items():
        seen[name] = _visit(watched, app, path, text)
        watched.outside.clear()
    assert seen == {name: _clean() for name in pages}
    assert beacon.hits == []


def test_hostile_links_fetch_nothing_outside(watched: Watched, hostile_app: HostileApp, beacon: Beacon) -> None:
    md = lambda tag: quote(f"![x]({beacon.url}/{tag}.png) [y]({beacon.url}/{tag}-link)")  # noqa: E731
    paths = {}
    for page in ("Explore", "Map", "Trials", "Assistant"):
        paths[f"{page} near"] = f"/{page}?near={md('near')}"
        paths[f"{page} unknown parameter"] = f"/{page}?{md('key')}=1"
        paths[f"{page} text filters"] = f"/{page}?condition={md('cond')}&intervention={md('int')}&sponsor={md('sp')}"
    paths["Trials bad nct"] = f"/Trials?nct={md('nct')}"
    paths["Trials bad compare"] = f"/Trials?compare={md('cmp')},NCT00000001"
    paths["Map bad mode"] = f"/Map?map={md('mode')}"
    paths["Trials bad sort"] = f"/Trials?sort={md('sort')}&page={md('page')}"
    seen = {}
    for name, path in paths.items():
        seen[name] = _visit(watched, hostile_app, path)
        watched.outside.clear()
    assert seen == {name: _clean() for name in paths}
    assert beacon.hits == []


def test_hostile_report_html_and_pdf_fetch_nothing_outside(watched: Watched, hostile_app: HostileApp,
                                                           beacon: Beacon) -> None:
    from services import report

    html = hostile_app.report_html
    assert hostile.MARK in html  # the hostile trial is in the report
    watched.page.set_content(html, wait_until="load")
    assert (watched.outside, _outside_links(watched.page, hostile_app.url)) == ([], [])
    if report.find_chromium() is None:
        pytest.skip("no PDF engine (Chromium) on this machine")
    pdf = report.render_pdf(html)
    assert pdf is not None and pdf.startswith(b"%PDF")
    assert beacon.hits == []
    assert urlsplit(beacon.url).hostname == "127.0.0.1"  # the beacon was reachable from the PDF engine
