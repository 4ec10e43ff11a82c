"""The Sites page in a real headless Chromium, opened from a share link: the table and the map of the groups."""

from __future__ import annotations

import io
import os
import shutil
import time
from pathlib import Path

import pytest

from devtools.commands.bench_load_cmd import free_port, streamlit_server
from services.dashboard import feasibility
from services.dashboard.filters import Filters
from services.data import geo

CHROMIUM = "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else shutil.which("chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]


def _green_and_red(png: bytes) -> tuple[int, int]:
    """Pixels of recruiting groups (the status green) and of the place's pin (red) in a screenshot."""
    from PIL import Image

    raw = Image.open(io.BytesIO(png)).convert("RGB").tobytes()
    pixels = [(raw[i], raw[i + 1], raw[i + 2]) for i in range(0, len(raw), 3)]
    return (sum(1 for r, g, b in pixels if g > r + 50 and g > b + 30),
            sum(1 for r, g, b in pixels if r > 150 and g < 90 and b < 100))


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (/usr/bin/chromium)")
def test_sites_page_from_a_share_link_in_chromium(db, tmp_path):
    from playwright.sync_api import sync_playwright

    expected = feasibility.site_table(Filters(condition="diabetes"), geo.geocode("Boston, MA").place, "distance",
                                      db=db)
    first = str(expected.rows["facility"].iloc[0])
    port = free_port()
    with streamlit_server(port), sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1600})
        page.set_default_timeout(120_000)
        page.goto(f"http://127.0.0.1:{port}/Sites?condition=diabetes&rank=distance&from=Boston%2C%20MA")
        page.get_by_text(f"{expected.totals['groups']:,} sites (facility groups)").wait_for()
        page.locator("[data-testid=stDataFrame]").wait_for()
        chart = page.locator("[data-testid=stDeckGlJsonChart]")
        chart.wait_for()
        page.locator("[data-testid=stStatusWidget]").wait_for(state="detached")
        assert page.locator("[data-testid=stException]").count() == 0
        # The ranking and the place came from the link: the radio shows "Nearest", the input the place.
        assert page.get_by_role("radio", name="Nearest").is_checked()
        assert page.get_by_role("textbox", name="Distances from").input_value() == "Boston, MA"
        # The table's first row (read from the grid's accessible cells) is the nearest group.
        page.locator("[data-testid=stDataFrame] [role=gridcell]").filter(has_text=first).first.wait_for(
            state="attached")  # the grid draws on a canvas; its cells are also in an accessible table
        # deck.gl draws after the element appears: look again until the recruiting dots and the pin show.
        deadline = time.monotonic() + 60
        while True:
            green, red = _green_and_red(chart.screenshot())
            if (green > 30 and red > 30) or time.monotonic() > deadline:
                break
            page.wait_for_timeout(250)
        assert green > 30 and red > 30, (green, red)
        shot = Path(os.environ.get("SITES_SCREENSHOT_DIR") or tmp_path) / "sites.png"
        shot.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shot), full_page=True)
        browser.close()
