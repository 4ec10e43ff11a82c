"""The Explore page in a real headless Chromium: every chart draws, a bar click filters, the share link reopens it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from devtools.commands.bench_load_cmd import free_port, streamlit_server
from services.dashboard import stats
from services.dashboard.filters import Filters

CHROMIUM = "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else shutil.which("chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
CHARTS = 24  # the funnel and 23 facet charts (therapeutic areas and stop categories since issue 38)


_WIDENED_MARGINS = """() => [...document.querySelectorAll('.js-plotly-plot')].flatMap(gd => ['l', 'r', 't', 'b']
    .filter(k => gd.layout.margin && gd.layout.margin[k] !== undefined
                 && Math.round(gd._fullLayout._size[k]) > gd.layout.margin[k])
    .map(k => `${gd.layout.title.text} ${k}: ${gd.layout.margin[k]} -> ${Math.round(gd._fullLayout._size[k])}`))"""


# The values of the metrics whose label is exactly `label`. Matched on the label element, not on the box's
# text: during a rerun the previous run's boxes stand beside the new ones, and has_text is a substring match.
_METRIC_VALUES = """label => [...document.querySelectorAll('[data-testid=stMetric]')]
    .filter(m => m.querySelector('[data-testid=stMetricLabel]')?.innerText.trim() === label)
    .map(m => m.querySelector('[data-testid=stMetricValue]')?.innerText.trim() ?? '')"""


def _metric(page, label: str) -> str:  # noqa: ANN001 - playwright Page
    """The value of the one metric labelled `label` (waits until exactly one is on the page)."""
    page.wait_for_function(f"label => ({_METRIC_VALUES})(label).length === 1", arg=label, timeout=120_000)
    values = page.evaluate(_METRIC_VALUES, label)
    assert len(values) == 1, (label, values)
    return str(values[0])


def _wait_for_metric(page, label: str, value: str, timeout_s: float = 120) -> None:  # noqa: ANN001
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(f"([label, value]) => {{ const v = ({_METRIC_VALUES})(label);"
                               " return v.length === 1 && v[0] === value; }",
                               arg=[label, value], timeout=timeout_s * 1000)
    except PlaywrightTimeout as err:
        shown = page.evaluate(_METRIC_VALUES, label)
        raise AssertionError(f"{label} shows {shown}, expected {value}") from err


def _wait_for_charts(page) -> None:  # noqa: ANN001
    page.locator(".js-plotly-plot").nth(CHARTS - 1).wait_for(timeout=120_000)
    page.locator("[data-testid=stStatusWidget]").wait_for(state="detached", timeout=120_000)
    # Plotly draws each figure after its element is attached: wait until every chart has its traces.
    page.wait_for_function(
        "n => { const p = document.querySelectorAll('.js-plotly-plot');"
        " return p.length >= n && [...p].every(e => e.querySelector('g.trace')); }",
        arg=CHARTS, timeout=120_000)


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (/usr/bin/chromium)")
def test_explore_in_chromium(db, tmp_path):
    from playwright.sync_api import sync_playwright

    port = free_port()
    with streamlit_server(port):
        start = Filters()
        clicked = Filters(phase=("PHASE2",))
        before, after = stats.dashboard(start, db=db), stats.dashboard(clicked, db=db)
        phase_index = [r["value"] for r in before.facets["phase"]].index("PHASE2")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1500, "height": 1200})
            page.goto(f"http://127.0.0.1:{port}/Explore", wait_until="networkidle")
            _wait_for_charts(page)
            plots = page.locator(".js-plotly-plot")
            assert plots.count() == CHARTS
            for i in range(CHARTS):  # every chart drew bars (the whole sample has data for each)
                assert plots.nth(i).locator("g.trace").count() >= 1, i
            assert page.locator("[data-testid=stException]").count() == 0
            assert _metric(page, "Matching trials") == f"{before.kpis['matching_trials']:,}"
            # Every chart's margins fit its labels from the start (charts.label_px): automargin widened none of
            # them, so Plotly drew each chart once.
            assert page.evaluate(_WIDENED_MARGINS) == []
            page.set_viewport_size({"width": 1500, "height": 6600})
            _wait_for_charts(page)  # the resize redraws every figure
            shot = Path(os.environ.get("EXPLORE_SCREENSHOT_DIR") or tmp_path) / "explore.png"
            shot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 100_000
            page.set_viewport_size({"width": 1500, "height": 1200})

            # A click on the "Phase 2" bar filters the whole page.
            phase_chart = plots.filter(has=page.locator(".gtitle", has_text="Phase"))
            phase_chart.first.locator("g.point").nth(phase_index).click(force=True)
            _wait_for_metric(page, "Matching trials", f"{after.kpis['matching_trials']:,}")
            _wait_for_charts(page)
            assert _metric(page, "Recruiting now") == f"{after.kpis['recruiting']:,}"
            # The share link and the address bar follow the filter at the end of the run that drew it (under load
            # a moment after the numbers): wait for them, then read.
            page.wait_for_function("() => { const c = document.querySelector('[data-testid=stSidebar] code');"
                                   " return !!c && c.innerText.trim().endsWith('?phase=PHASE2')"
                                   " && location.search === '?phase=PHASE2'; }", timeout=120_000)
            link = page.locator("[data-testid=stSidebar] code").first.inner_text().strip()
            assert link.endswith("?phase=PHASE2") and page.evaluate("location.search") == "?phase=PHASE2"

            # The share link in a fresh browser (no session) gives the same view.
            fresh = browser.new_context(viewport={"width": 1500, "height": 1200}).new_page()
            fresh.goto(link.replace("localhost", "127.0.0.1"), wait_until="networkidle")
            _wait_for_charts(fresh)
            for label in ("Matching trials", "Recruiting now", "Sites", "Countries", "Planned enrollment"):
                assert _metric(fresh, label) == _metric(page, label)
            assert fresh.locator("[data-testid=stSidebar]").get_by_text("Phase 2", exact=True).count() == 1
            browser.close()
