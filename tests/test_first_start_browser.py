"""A first start watched from a browser: a fresh data folder, the stages with counts, then the home page."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from devtools.commands.bench_load_cmd import free_port, stop_process
from devtools.loadtest import http_get

pytestmark = [pytest.mark.browser, pytest.mark.slow]
playwright_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed")

PROJECT = Path(__file__).resolve().parent.parent
FIRST_START_TIMEOUT_S = 900  # a first start loads the whole sample; minutes on a busy 2-core machine
COUNT = re.compile(r"\d[\d,]*( of [\d,]+)? [a-z]")  # "800 of 1,442 records", "1,442 studies", "5 schema files"


def _stage_lines(page) -> list[str]:  # noqa: ANN001
    """The start's stage lines now on the page: finished ones (✅) and the running one (progress bar text)."""
    return page.evaluate("""() => {
        const out = [];
        document.querySelectorAll('[data-testid="stMarkdownContainer"], [data-testid="stProgress"]').forEach(e => {
            const t = (e.innerText || '').trim();
            if (t.startsWith('✅') || t.startsWith('⏳')) out.push(t.slice(1).trim());
        });
        return out;
    }""")


def test_first_start_shows_named_stages_with_counts_before_the_home_page(scratch_dir):
    data_dir = scratch_dir / "fresh"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "APP_PASSWORD")}
    env["TRIAL_LANDSCAPE_DATA_DIR"] = str(data_dir)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = scratch_dir / "server.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(PROJECT / "app.py"), "--server.port",
                                 str(port), "--server.address", "127.0.0.1", "--server.headless", "true",
                                 "--browser.gatherUsageStats", "false"], cwd=PROJECT, env=env, stdout=log,
                                stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                http_get(f"{url}/_stcore/health", timeout_s=2)
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, log_path.read_text(errors="replace")
                time.sleep(0.2)
        seen: dict[str, str] = {}  # stage name → the last line with a count seen for it
        with playwright_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium")
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(url, timeout=120_000)
                home = page.get_by_text("Where to go")
                deadline = time.monotonic() + FIRST_START_TIMEOUT_S
                while not home.is_visible():
                    assert time.monotonic() < deadline, f"no home page after {FIRST_START_TIMEOUT_S} s; saw {seen}"
                    for line in _stage_lines(page):
                        name, _, rest = line.partition(" — ")
                        if COUNT.search(rest):
                            seen[name] = line
                    page.wait_for_timeout(100)
                page.locator('[data-testid="stMetric"]').first.wait_for(timeout=120_000)
            finally:
                browser.close()
        assert len(seen) >= 3, seen
        assert any(name.startswith("Loading JSON studies") for name in seen), seen
        assert any(name.startswith("Loading CSV studies") for name in seen), seen
        # The server log names the same stages with their counts.
        log_text = log_path.read_text(errors="replace")
        for name in seen:
            assert re.search(re.escape(name) + r" — \d", log_text), (name, log_text[-3000:])
    finally:
        stop_process(proc)
