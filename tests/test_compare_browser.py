"""The Compare page in a real headless Chromium: a share link with both filter sets shows both sets' numbers, every
comparison chart draws, and the page's own share link is the same URL and reopens the same page."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from devtools.commands.bench_load_cmd import free_port, streamlit_server
from services.dashboard import compare, stats
from services.dashboard.filters import Filters

CHROMIUM = "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else shutil.which("chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
CHARTS = 24  # the funnel and 23 facet charts, each A vs B
QUERY = "condition=lung%20cancer&status=ANY&b.condition=diabetes&b.phase=PHASE3"


# The first page of a new server process loads the data as well: 20 s on a quiet machine, and CI once took
# over 120 s with the other workers busy. A page that fails shows an exception box, which ends the wait at
# once.
FIRST_PAGE_TIMEOUT_MS = 300_000
_SHOWN = """() => Object.fromEntries([...document.querySelectorAll('[data-testid=stMetric]')].map(b => [
    b.querySelector('[data-testid=stMetricLabel]')?.innerText.trim(),
    b.querySelector('[data-testid=stMetricValue]')?.innerText.trim()]))"""


def _wait_for_page(page, want: dict[str, str], timeout: int = 120_000) -> None:  # noqa: ANN001 - a Page
    """Wait until every KPI box shows the wanted value and every chart has drawn its bars; say what was shown
    if they never do, and stop at once at an exception box."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(
            f"""want => {{
                if (document.querySelector('[data-testid=stException]')) return true;
                const shown = ({_SHOWN})();
                return Object.entries(want).every(([k, v]) => shown[k] === v); }}""",
            arg=want, timeout=timeout)
    except PlaywrightTimeout:
        pytest.fail(f"the KPI boxes never showed {want}; they showed {page.evaluate(_SHOWN)}")
    assert page.locator("[data-testid=stException]").all_inner_texts() == []
    page.wait_for_function(
        "n => { const p = document.querySelectorAll('.js-plotly-plot');"
        " return p.length >= n && [...p].every(e => e.querySelector('g.trace')); }",
        arg=CHARTS, timeout=timeout)
    page.locator("[data-testid=stStatusWidget]").wait_for(state="detached", timeout=timeout)


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (/usr/bin/chromium)")
def test_compare_share_link_in_chromium(db, tmp_path):
    from playwright.sync_api import sync_playwright

    fa, fb = Filters(condition="lung cancer", status=()), Filters(condition="diabetes", phase=("PHASE3",))
    assert compare.b_from_query({"b.condition": "diabetes", "b.phase": "PHASE3"}) == (fb, [])
    a, b = stats.dashboard(fa, db=db), stats.dashboard(fb, db=db)
    want = {f"{side} · {label}": f"{d.kpis[key]:,}" for side, d in (("A", a), ("B", b)) for key, label in compare.KPIS}
    assert want["A · Matching trials"] != want["B · Matching trials"]  # the two sets are told apart
    shots = Path(os.environ.get("COMPARE_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    port = free_port()
    with streamlit_server(port), sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1200})
        page.goto(f"http://127.0.0.1:{port}/Compare?{QUERY}", wait_until="networkidle")
        _wait_for_page(page, want, timeout=FIRST_PAGE_TIMEOUT_MS)
        assert page.locator(".js-plotly-plot").count() == CHARTS
        assert page.locator("[data-testid=stAlert]").filter(has_text="not used").count() == 0  # a clean link
        # Each chart has an A and a B series, named in its legend.
        legend = page.locator(".js-plotly-plot").first.locator("g.legend text.legendtext").all_text_contents()
        assert legend == ["A (sidebar)", "B (this page)"]
        # The page's share link and the address bar are the URL that was opened.
        page.wait_for_function(
            "q => { const c = document.querySelector('[data-testid=stSidebar] code');"
            " return !!c && c.innerText.trim().endsWith('?' + q) && location.search === '?' + q; }",
            arg=QUERY, timeout=120_000)
        link = page.locator("[data-testid=stSidebar] code").first.inner_text().strip()
        assert link == f"http://localhost:{port}/Compare?{QUERY}" or link.endswith(f"/Compare?{QUERY}")
        page.screenshot(path=str(shots / "compare-top.png"))

        # The share link in a fresh browser (no session): both sets' numbers again, and B's panel holds B.
        fresh = browser.new_context(viewport={"width": 1400, "height": 1200}).new_page()
        fresh.goto(link.replace("localhost", "127.0.0.1"), wait_until="networkidle")
        _wait_for_page(fresh, want)
        assert fresh.locator("[data-testid=stMain]").get_by_role("textbox", name="Condition").input_value() == "diabetes"  # B
        assert fresh.locator("[data-testid=stSidebar]").get_by_role("textbox", name="Condition").input_value() == "lung cancer"
        fresh.wait_for_function("q => location.search === '?' + q", arg=QUERY, timeout=120_000)
        fresh.screenshot(path=str(shots / "compare-reopened.png"))
        browser.close()
