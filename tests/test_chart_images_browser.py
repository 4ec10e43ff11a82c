"""Charts for a paper and the URL API in Chromium: a chart's toolbar button downloads it as SVG and as PNG
(Plotly's own toImage, in the browser, with no network), the SVG carrying the filters; "Show the SQL" opens
under the KPIs; the API's JSON opens in the browser. Screenshots go to $SHOTS_DIR (default /tmp/shots)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from services.dashboard import showsql, stats
from services.dashboard.filters import Filters
from tests.test_browser import (  # noqa: F401 - pytest fixtures used by name
    CHROMIUM,
    app_url,
    browser,
    page,
    playwright_api,
    pytestmark,
    settle,
)

SHOTS = Path(os.environ.get("SHOTS_DIR", "/tmp/shots"))
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _download(pg, chart, title: str) -> bytes:  # noqa: ANN001
    chart.scroll_into_view_if_needed()
    chart.hover()
    button = chart.locator(f'.modebar-btn[data-title="{title}"]')
    with pg.expect_download() as download:
        button.click()
    return Path(download.value.path()).read_bytes()


def test_chart_images_download_as_svg_and_png_with_the_filters(page, app_url: str) -> None:  # noqa: F811
    SHOTS.mkdir(parents=True, exist_ok=True)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(f"{app_url}/Explore?phase=PHASE2&status=ANY")
    settle(page)
    dash = stats.cached_dashboard(Filters(phase=("PHASE2",), status=()))
    # "Show the SQL" under the KPIs: the KPIs' SQL, with the filters written out
    shown = (
        page.locator('[data-testid="stMain"] [data-testid="stExpander"]')
        .filter(has_text="Show the SQL")
        .first
    )
    shown.get_by_text("Show the SQL").click()
    code = shown.locator("code")
    playwright_api.expect(code).to_contain_text("-- Filters: Status: any · Phase: Phase 2")
    kpis_sql = showsql.dashboard_sql(Filters(phase=("PHASE2",), status=()))["kpis"].sql
    assert kpis_sql.splitlines()[0] in code.inner_text()
    page.screenshot(path=str(SHOTS / "explore-show-sql.png"), full_page=False)

    chart = page.locator('[data-testid="stPlotlyChart"]').nth(1)  # the first facet chart (after the funnel)
    png = _download(page, chart, "Download plot as a PNG")
    assert png.startswith(PNG_SIGNATURE) and len(png) > 5_000
    page.locator(".st-key-explore_image_format").get_by_role("radio", name="SVG").click(force=True)
    settle(page)
    chart = page.locator('[data-testid="stPlotlyChart"]').nth(1)
    svg = _download(page, chart, "Download plot").decode("utf-8")
    assert svg.lstrip().startswith("<svg") and "Phase: Phase 2" in svg and "Status: any" in svg
    assert f"{dash.facets['phase'][0]['count']:,}" in svg or str(dash.facets["phase"][0]["count"]) in svg
    host = app_url.split("//", 1)[1]
    assert [u for u in requests if not u.startswith(("data:", "blob:")) and host not in u] == []  # offline

    page.goto(f"{app_url}/api/v1/stats.json?phase=PHASE2&status=ANY")
    body = json.loads(page.locator("body").inner_text())
    assert body["kpis"] == dash.kpis
    page.screenshot(path=str(SHOTS / "api-stats-json.png"))
