"""Downloads behind the gate and the readiness check, on the production entry point (serve.py) in a real browser.

Streamlit serves download data at /media/<id> to whoever asks; serve.py's media gate serves it only to a
browser that passed the password in this process. A signed-in browser gets its CSV; the same URL fetched by
another client without cookies, or by a fresh browser that never signed in, is refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.commands.bench_load_cmd import free_port, stop_process
from services.loadtest import http_get
from tests.test_browser import ARGS, CHROMIUM, LOAD_TIMEOUT_MS, PASSWORD, _env, settle

PROJECT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install -y chromium)"),
]
playwright_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed")


@pytest.fixture(scope="module")
def served(db) -> Iterator[str]:  # noqa: ANN001 - the session database must exist before the server attaches
    port = free_port()
    log = Path(os.environ["TRIAL_LANDSCAPE_DATA_DIR"]) / f"serve-{port}.log"
    cmd = [sys.executable, "-m", "streamlit", "run", "serve.py", "--server.port", str(port),
           "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=PROJECT, env=_env(APP_PASSWORD=PASSWORD), stdout=out,
                                stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, log.read_text()[-3000:]
            try:
                http_get(f"{url}/_stcore/health", timeout_s=2)
                break
            except OSError:
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.3)
        yield url
    finally:
        stop_process(proc)


def _status(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:  # noqa: S310 - loopback test server
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def test_download_gate_refuses_a_client_that_never_signed_in(served):
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
        page = context.new_page()
        page.set_default_timeout(LOAD_TIMEOUT_MS)
        page.goto(served + "/Explore")
        page.get_by_label("Password", exact=True).fill(PASSWORD)
        page.get_by_role("button", name="Enter").click()
        page.get_by_text("Explore the trial landscape").wait_for()
        settle(page)
        with page.expect_download() as info:
            page.get_by_role("button", name="CSV").click()
        download = info.value
        media_url = download.url
        assert "/media/" in media_url
        with open(download.path(), "rb") as fh:
            assert fh.read().startswith(b"nct_id")
        # the signed-in browser may fetch it again
        again = context.request.get(media_url)
        assert again.status == 200 and again.body().startswith(b"nct_id")
        # another client, no cookies: refused
        status, body = _status(media_url)
        assert status == 403 and b"signed-in visitors" in body
        # a fresh browser that opened the app but never signed in: refused
        stranger = browser.new_context()
        stranger_page = stranger.new_page()
        stranger_page.goto(served + "/")
        stranger_page.get_by_label("Password", exact=True).wait_for()
        assert stranger.request.get(media_url).status == 403
        stranger.close()
        context.close()
        browser.close()


def test_readiness_reports_the_database(served):
    status, body = _status(served + "/readyz")
    verdict = json.loads(body)
    assert (status, verdict["ready"]) == (200, True)
    assert verdict["latency_ms"] >= 0 and verdict["database"]
