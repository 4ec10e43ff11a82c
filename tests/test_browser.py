"""Real-browser end-to-end tests: Playwright drives Debian's Chromium against Streamlit servers these tests start.

The open server runs on the test session's database (TRIAL_LANDSCAPE_DATA_DIR of this pytest run, the whole
sample); a second one has APP_PASSWORD set; a third points DATABASE_URL at a small server of its own that the
test stops and starts. Screenshots go to /tmp/shots/.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from devtools.commands.bench_load_cmd import free_port, stop_process
from devtools.loadtest import http_get

CHROMIUM = "/usr/bin/chromium"
PROJECT = Path(__file__).resolve().parent.parent
SHOTS = Path("/tmp/shots")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
PASSWORD = "open sesame 42"
LOAD_TIMEOUT_MS = 90_000
EXPLORE_KPIS = 5  # matching trials, recruiting, sites, countries, planned enrollment

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install -y chromium)"),
]
playwright_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed")


def _page_paths() -> list[tuple[str, str]]:
    """(URL path, file) of every page in the pages table (services/ui/pages.py)."""
    from services.ui import pages

    return [(f"/{page.url_path}", page.path) for page in pages.PAGES]


# ---- servers ------------------------------------------------------------------------------------
def _start_streamlit(env: dict[str, str]) -> tuple[subprocess.Popen, str, Path]:
    port = free_port()
    log = Path(os.environ["TRIAL_LANDSCAPE_DATA_DIR"]) / f"streamlit-{port}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
           "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=PROJECT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited at start:\n{log.read_text()[-3000:]}")
        try:
            http_get(f"{url}/_stcore/health", timeout_s=2)
            return proc, url, log
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"streamlit did not answer in time:\n{log.read_text()[-3000:]}") from None
            time.sleep(0.3)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("APP_PASSWORD", "ANTHROPIC_API_KEY")}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def app_url(db) -> Iterator[str]:  # noqa: ANN001 - the session database must exist before the server attaches
    proc, url, _ = _start_streamlit(_env())
    yield url
    stop_process(proc)


@pytest.fixture(scope="module")
def gated_url(db) -> Iterator[str]:  # noqa: ANN001
    proc, url, _ = _start_streamlit(_env(APP_PASSWORD=PASSWORD))
    yield url
    stop_process(proc)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture()
def page(browser):  # noqa: ANN001, ANN201
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    pg.set_default_timeout(LOAD_TIMEOUT_MS)
    yield pg
    context.close()


# ---- helpers ---------------------------------------------------------------------------------------
IDLE_APP = '[data-testid="stApp"][data-test-script-state="notRunning"]'


def settle(pg, quiet_s: float = 1.2) -> None:  # noqa: ANN001
    """Wait until the page has a heading and its script has stayed finished for quiet_s: Streamlit's app root says
    "notRunning" (its own script state, set when the server reports the run finished) and no running indicator
    shows. quiet_s covers a run that ends by asking for another (st.rerun, a URL update)."""
    pg.wait_for_selector("h1", timeout=LOAD_TIMEOUT_MS)
    quiet_since = None
    deadline = time.monotonic() + LOAD_TIMEOUT_MS / 1000
    while time.monotonic() < deadline:
        if pg.locator('[data-testid="stStatusWidget"]').count() or not pg.locator(IDLE_APP).count():
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= quiet_s:
            return
        time.sleep(0.1)
    raise AssertionError(f"{pg.url} kept running for {LOAD_TIMEOUT_MS / 1000:.0f} s")


def exceptions(pg) -> list[str]:  # noqa: ANN001
    return [e.inner_text()[:500] for e in pg.locator('[data-testid="stException"]').all()]


def sidebar_input(pg, label: str):  # noqa: ANN001, ANN201
    return pg.locator('[data-testid="stSidebar"]').get_by_label(label, exact=True)


def metrics(pg, count: int | None = None) -> dict[str, str]:  # noqa: ANN001
    """Label → value of every metric; with `count`, first wait until that many have arrived (a loaded machine can
    pause a run between two boxes of the same row)."""
    pg.wait_for_selector('[data-testid="stMetric"]')
    if count is not None:
        playwright_api.expect(pg.locator('[data-testid="stMetric"]')).to_have_count(count, timeout=LOAD_TIMEOUT_MS)
    out = {}
    for m in pg.locator('[data-testid="stMetric"]').all():
        out[m.locator('[data-testid="stMetricLabel"]').inner_text().strip()] = (
            m.locator('[data-testid="stMetricValue"]').inner_text().strip())
    return out


def query(pg) -> dict[str, list[str]]:  # noqa: ANN001
    return parse_qs(urlsplit(pg.url).query)


def goto_nav(pg, label: str) -> None:  # noqa: ANN001
    # The link holds the page's icon and its label, each in an element of its own.
    pg.locator('[data-testid="stSidebarNav"] a').filter(has=pg.get_by_text(label, exact=True)).click()
    pg.wait_for_url(re.compile(rf"/{label}(\?|$)"))
    settle(pg)


# ---- tests -----------------------------------------------------------------------------------------
def test_browser_every_page_loads_without_an_exception(page, app_url):
    seen = {}
    for path, file in _page_paths():
        page.goto(app_url + path)
        settle(page)
        seen[file] = (exceptions(page), page.locator("h1").count() >= 1,
                      page.locator('[data-testid="stSidebar"]').count() == 1)
    assert seen == {file: ([], True, True) for _, file in _page_paths()}


def test_browser_filter_set_on_explore_is_kept_on_map_and_trials(page, app_url):
    page.goto(app_url + "/Explore")
    settle(page)
    box = sidebar_input(page, "Condition")
    box.fill("leukemia")
    box.press("Enter")
    page.wait_for_url(re.compile(r"condition=leukemia"))
    settle(page)
    kept = {}
    for name in ("Map", "Trials", "Explore"):
        goto_nav(page, name)
        kept[name] = (query(page).get("condition"), sidebar_input(page, "Condition").input_value(),
                      exceptions(page))
    assert kept == {name: (["leukemia"], "leukemia", []) for name in ("Map", "Trials", "Explore")}


def test_browser_share_link_opens_the_same_view_in_a_fresh_context(page, app_url, browser):
    page.goto(app_url + "/Explore?condition=lymphoma&status=ANY&phase=PHASE2")
    settle(page)
    original = metrics(page, count=EXPLORE_KPIS)
    link = page.locator('[data-testid="stSidebar"] [data-testid="stCode"]').first.inner_text().strip()
    assert link.startswith(app_url + "/Explore?")
    assert parse_qs(urlsplit(link).query) == {"condition": ["lymphoma"], "status": ["ANY"], "phase": ["PHASE2"]}

    fresh = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        other = fresh.new_page()
        other.set_default_timeout(LOAD_TIMEOUT_MS)
        other.goto(link)
        settle(other)
        # Under load the first run of a new session can still be finishing: let the value arrive.
        playwright_api.expect(sidebar_input(other, "Condition")).to_have_value("lymphoma", timeout=LOAD_TIMEOUT_MS)
        settle(other)
        assert exceptions(other) == []
        assert metrics(other, count=EXPLORE_KPIS) == original
        assert original["Matching trials"] not in ("", "0")
    finally:
        fresh.close()


def test_browser_password_gate_blocks_then_admits(page, gated_url, db):  # noqa: ANN001
    page.goto(gated_url + "/Explore")
    page.wait_for_selector("h1")
    settle(page)
    assert page.locator("h1").first.inner_text().strip() == "🔒 Trial Landscape"
    assert (page.locator('[data-testid="stMetric"]').count(), page.locator('[data-testid="stPlotlyChart"]').count(),
            page.locator('[data-testid="stSidebarUserContent"] input').count(),
            page.locator('[data-testid="stSidebar"]').is_visible()) == (0, 0, 0, False)
    SHOTS.mkdir(parents=True, exist_ok=True)
    field = page.get_by_label("Password", exact=True)
    field.fill("guess")
    page.get_by_role("button", name="Enter").click()
    page.get_by_text("That password is not right").wait_for()
    assert field.input_value() == ""
    page.screenshot(path=str(SHOTS / "login_gate.png"))
    # The first wrong try costs one second (a try before then is refused unchecked): wait until the gate's own
    # record says tries are accepted again, instead of sleeping for a guessed second.
    deadline = time.monotonic() + 30
    while db.fetch_value("SELECT count(*) FROM app.limit_failures WHERE kind = 'password' "
                         "AND next_try_at > clock_timestamp()"):
        assert time.monotonic() < deadline, "the gate kept refusing tries for 30 s after one wrong password"
        time.sleep(0.05)
    field.fill(PASSWORD)
    page.get_by_role("button", name="Enter").click()
    page.wait_for_selector('[data-testid="stMetric"]')
    settle(page)
    assert page.locator("h1").first.inner_text().strip().endswith("Explore the trial landscape")
    assert exceptions(page) == []
    assert PASSWORD not in page.url and "guess" not in page.url
    # admitted once per browser session: other pages open directly
    goto_nav(page, "Data")
    assert page.locator("h1").first.inner_text().strip().endswith("Data")


def test_browser_database_down_banner_then_recovers_by_itself(page, browser, scratch_dir):
    from tests import scratch_server

    url_db = scratch_server.prepare(scratch_dir, studies=40)
    scratch_server.stop_server(scratch_dir)
    proc, url, log = _start_streamlit(_env(DATABASE_URL=url_db, TRIAL_LANDSCAPE_DATA_DIR=str(scratch_dir)))
    try:
        page.goto(url + "/Data")
        page.get_by_text("The database is not reachable right now").wait_for()
        settle(page)
        assert exceptions(page) == []
        assert page.get_by_role("button", name="Retry").count() == 1
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "db_down_banner.png"))
        scratch_server.start_server(scratch_dir)
        # nobody clicks: the banner's own check brings the page back within a few seconds
        page.wait_for_selector('[data-testid="stMetric"]', timeout=30_000)
        settle(page)
        assert metrics(page)["Studies"] == "40"
        assert page.get_by_text("The database is not reachable right now").count() == 0
        assert exceptions(page) == []
        assert "Traceback" not in log.read_text()
    finally:
        stop_process(proc)
        scratch_server.release(scratch_dir)


ASSISTANT_PAGE = PROJECT / "app_pages" / "assistant.py"


@pytest.mark.skipif(not ASSISTANT_PAGE.exists(), reason="the Assistant page is not there yet")
def test_browser_guided_assistant_reaches_a_report_and_keeps_patients_apart(page, app_url, browser):
    page.goto(app_url + "/Assistant")
    settle(page)
    page.get_by_label("Diagnosis *", exact=True).fill("chronic lymphocytic leukemia")
    page.get_by_label("Biomarkers or genetic test results", exact=True).fill("TP53 mutated, IGHV unmutated")
    page.get_by_label("Age *", exact=True).fill("67")
    page.get_by_text("Female", exact=True).click()
    page.get_by_label("Where do you live? *", exact=True).fill("Boston, MA")
    page.get_by_role("button", name="Save my answers and continue").click()
    steps = ["Search for trials", "Check my eligibility for these trials"]
    for name in steps:
        page.get_by_role("button", name=name).click(timeout=LOAD_TIMEOUT_MS)
        settle(page)
        assert exceptions(page) == [], name
    page.get_by_text("Include in my report").first.click()
    page.get_by_role("button", name=re.compile(r"^Use the 1 ticked trial")).click()
    settle(page)
    page.get_by_role("button", name="Write my report").click()
    page.get_by_text("Your report", exact=True).wait_for(timeout=LOAD_TIMEOUT_MS)
    settle(page)
    assert exceptions(page) == []
    playwright_api.expect(page.get_by_role("button", name="Download report (HTML)")).to_have_count(1)
    token = parse_qs(urlsplit(page.url).query)["session"][0]
    assert len(token) >= 43
    # The dashboard's share link holds filter fields only: no biomarkers, no session token.
    link = page.locator('[data-testid="stSidebar"] [data-testid="stCode"]').first.inner_text()
    assert ("TP53" not in link, "IGHV" not in link, token not in link, "session=" not in link) == (True,) * 4

    # Another person (a fresh browser) sees an empty assistant, not this patient's answers.
    other = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        p2 = other.new_page()
        p2.set_default_timeout(LOAD_TIMEOUT_MS)
        p2.goto(app_url + "/Assistant")
        settle(p2)
        assert p2.get_by_label("Diagnosis *", exact=True).input_value() == ""
        assert p2.get_by_text("TP53").count() == 0 and p2.get_by_text("Your report", exact=True).count() == 0
        assert "session=" not in p2.url
    finally:
        other.close()
