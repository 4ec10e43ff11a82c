"""Downloads behind the gate and the readiness check, on the README's `streamlit run app.py`, in a real browser.

Streamlit serves download data at /media/<id> to whoever asks; app.py's media gate serves it only to a
browser that passed the password in this process. A signed-in browser gets its CSV; the same URL fetched by
another client without cookies, or by a fresh browser that never signed in, is refused.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from devtools.commands.bench_load_cmd import stop_process
from tests.test_browser import ARGS, CHROMIUM, LOAD_TIMEOUT_MS, PASSWORD, _env, _start_streamlit, settle

PROJECT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install -y chromium)"),
]
playwright_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed")


@pytest.fixture(scope="module")
def served(db) -> Iterator[str]:  # noqa: ANN001 - the session database must exist before the server attaches
    proc, url, _ = _start_streamlit(_env(APP_PASSWORD=PASSWORD))
    yield url
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
    assert set(verdict) == {"ready", "latency_ms"} and verdict["latency_ms"] >= 0  # nothing else: no path
