"""Issue 38's filters in a real headless Chromium on Explore: a start-year filter says how many trials it
cannot judge and the include option changes the count; Country = Germany counts the sites in Germany and names
the funnel's place stage; the visible status control switches to any status in one click."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from devtools.commands.bench_load_cmd import free_port, streamlit_server
from services.dashboard import engine, sitemap, stats
from services.dashboard.filters import Filters

CHROMIUM = "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else shutil.which("chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SHOTS = os.environ.get("FILTERS38_SCREENSHOT_DIR")  # e.g. /work/shots/filters38 (else the test's tmp_path)
METRIC = """([label, value]) => [...document.querySelectorAll('[data-testid=stMetric]')].some(m =>
    m.innerText.includes(label)
        && m.querySelector('[data-testid=stMetricValue]').innerText.trim() === value)"""
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (/usr/bin/chromium)"),
]


@pytest.fixture(scope="module")
def site(db: Any) -> Iterator[tuple[Any, str]]:
    """One app server and browser for the module's tests: (browser, base URL)."""
    from playwright.sync_api import sync_playwright

    port = free_port()
    with streamlit_server(port), sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser, f"http://127.0.0.1:{port}"
        browser.close()


def _open(site: tuple[Any, str], path: str) -> Any:
    browser, base = site
    page = browser.new_page(viewport={"width": 1500, "height": 1300})
    page.goto(base + path, wait_until="networkidle")
    return page


def _wait_metric(page: Any, label: str, value: int) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(METRIC, arg=[label, f"{value:,}"], timeout=300_000)
    except PlaywrightTimeout as err:
        shown = page.evaluate(
            "() => [...document.querySelectorAll('[data-testid=stMetric]')].map(m => m.innerText)"
        )
        raise AssertionError(
            f"{label} never showed {value:,}; the metrics read {shown} at {page.url}"
        ) from err


def _settled(page: Any) -> None:
    page.locator("[data-testid=stStatusWidget]").wait_for(state="detached", timeout=120_000)
    page.locator(".js-plotly-plot g.trace").first.wait_for(timeout=120_000)
    assert page.locator("[data-testid=stException]").count() == 0


def _shot(page: Any, tmp_path: Path, name: str) -> None:
    folder = Path(SHOTS) if SHOTS else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / name), full_page=False)


def test_start_year_says_what_it_leaves_out_and_include_changes_the_count(
    db: Any, site: Any, tmp_path: Path
) -> None:
    f = Filters(condition="Alzheimer's", start_from=2015)
    shown = stats.dashboard(f, db=db).kpis["matching_trials"]
    (left,) = stats.left_out(f, db=db)
    assert left.key == "start" and left.count > 0 and not left.included
    with_undated = stats.dashboard(
        Filters(condition="Alzheimer's", start_from=2015, include_missing=("start",)), db=db
    ).kpis["matching_trials"]
    assert with_undated == shown + left.count

    page = _open(site, f"/Explore?condition={quote(f.condition or '')}&start_from=2015")
    _wait_metric(page, "Matching trials", shown)
    _settled(page)
    note = f"The start year filter leaves out {left.count:,} trials without a start date"
    page.get_by_text(note).wait_for(timeout=60_000)
    _shot(page, tmp_path, "explore-alzheimers-from-2015.png")
    page.get_by_text(f"Include trials without a start date ({left.count:,})").click()
    _wait_metric(page, "Matching trials", with_undated)
    page.wait_for_url("**include=start**", timeout=60_000)
    page.get_by_text(f"Including {left.count:,} trials without a start date").wait_for(timeout=60_000)
    _settled(page)
    _shot(page, tmp_path, "explore-alzheimers-from-2015-including-undated.png")
    page.close()


def test_germany_counts_sites_in_germany_and_names_the_place_stage(
    db: Any, site: Any, tmp_path: Path
) -> None:
    f = Filters(country=("Germany",))
    d = stats.dashboard(f, db=db)
    ids = engine.SqlEngine(db).matching_ids(f)
    in_germany = int(
        db.fetch_value(
            "SELECT count(*) FROM ctgov.facilities f WHERE f.country = 'Germany' AND f.nct_id = ANY(:ids)",
            {"ids": ids},
        )
    )
    worldwide = int(
        db.fetch_value("SELECT count(*) FROM ctgov.facilities f WHERE f.nct_id = ANY(:ids)", {"ids": ids})
    )
    assert d.kpis["sites"] == in_germany < worldwide and d.kpis["countries"] == 1
    assert sitemap.map_data(f, db=db).summary.sites == in_germany  # the map counts the same sites
    assert d.funnel[-1]["stage"] == "Place: Germany" and d.funnel[-1]["active"]

    page = _open(site, "/Explore?country=Germany")
    _wait_metric(page, "Sites", in_germany)
    _wait_metric(page, "Countries", 1)
    _settled(page)
    funnel = page.locator(".js-plotly-plot").first
    funnel.get_by_text("Place: Germany").wait_for(timeout=60_000)
    assert page.get_by_text("Place (not set)").count() == 0
    _shot(page, tmp_path, "explore-germany.png")
    page.close()


def test_status_control_switches_to_any_status_in_one_click(db: Any, site: Any) -> None:
    default = stats.dashboard(Filters(), db=db).kpis["matching_trials"]
    any_status = stats.dashboard(Filters(status=()), db=db).kpis["matching_trials"]
    assert any_status > default

    page = _open(site, "/Explore")
    _wait_metric(page, "Matching trials", default)
    _settled(page)
    sidebar = page.locator("[data-testid=stSidebar]")
    sidebar.get_by_text("Open or still running", exact=True).wait_for(timeout=60_000)
    sidebar.get_by_text("Any status", exact=True).click()
    _wait_metric(page, "Matching trials", any_status)
    page.wait_for_url("**status=ANY**", timeout=60_000)
    page.get_by_text("Status: any").first.wait_for(timeout=60_000)  # the caption names it
    page.close()
