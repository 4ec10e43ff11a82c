"""The Timeline page in a real headless Chromium: a click on a trial's bar, or on its row label, opens that trial."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from devtools.commands.bench_load_cmd import free_port, streamlit_server
from services.dashboard import timeline
from services.dashboard.filters import Filters

CHROMIUM = "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else shutil.which("chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
OPENED = re.compile(r"/Trials\?(.*&)?nct=(NCT\d{8})")


def _wait_for_gantt(page) -> None:  # noqa: ANN001 - playwright Page
    page.locator(".js-plotly-plot g.trace.bars g.point").first.wait_for(timeout=120_000)
    page.locator("[data-testid=stStatusWidget]").wait_for(state="detached", timeout=120_000)


def _opened_trial(page, ids: set[str]) -> str:  # noqa: ANN001
    """Wait for the Trials page to show one of the timeline's trials; return its NCT id."""
    page.wait_for_url(OPENED, timeout=120_000)
    found = OPENED.search(page.url)
    assert found is not None
    nct = found.group(2)
    assert nct in ids
    page.locator("[data-testid=stMainBlockContainer]").get_by_text(nct).first.wait_for(timeout=120_000)
    page.locator("[data-testid=stStatusWidget]").wait_for(state="detached", timeout=120_000)
    return nct


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (/usr/bin/chromium)")
def test_timeline_bar_click_opens_the_trial(db):
    from playwright.sync_api import sync_playwright

    t = timeline.timeline(Filters(condition="asthma"), db=db)
    assert t.mode == "bars" and t.shown > 0
    ids = set(t.bars["nct_id"])
    port = free_port()
    with streamlit_server(port), sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        page.goto(f"http://127.0.0.1:{port}/Timeline?condition=asthma", wait_until="networkidle")
        _wait_for_gantt(page)
        assert page.locator("[data-testid=stException]").count() == 0
        page.locator(".js-plotly-plot g.trace.bars g.point").first.click(force=True)
        first = _opened_trial(page, ids)
        assert page.locator("[data-testid=stException]").count() == 0

        # The row label is a plain link to the same page of that trial.
        page.goto(f"http://127.0.0.1:{port}/Timeline?condition=asthma", wait_until="networkidle")
        _wait_for_gantt(page)
        link = page.locator(".js-plotly-plot .annotation a").first
        href = link.evaluate("e => e.getAttribute('href') || e.getAttribute('xlink:href') || ''")
        assert href.startswith("Trials?nct=")
        # A real mouse click at the label's middle (plotly's layers make Playwright's own actionability check
        # name the chart's container as the target, though the link is the element under that point).
        box = link.bounding_box()
        assert box is not None
        middle = (box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        assert page.evaluate("([x, y]) => document.elementFromPoint(x, y).closest('a') !== null", list(middle))
        page.mouse.click(*middle)
        second = _opened_trial(page, ids)
        assert second == href.split("=", 1)[1]
        assert first in ids and second in ids
        browser.close()
