"""The password gate and a session's media in real browsers (Chromium), on `streamlit run app.py` with a
password.

One visitor's wrong passwords hold up that browser, not a colleague's fresh browser on the same address
(issue 40: the delay was also per address, so the right password from browser B was refused). A patient's
report URL is served only to the browser of the session that made it, and answers 404 as soon as that
session is forgotten.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from devtools.commands.bench_load_cmd import stop_process
from services import access
from services.assistant import AssistantSession
from services.assistant.store import SessionStore
from services.limits import duration
from tests.test_browser import (  # noqa: F401 - pytest fixtures used by name
    LOAD_TIMEOUT_MS,
    PASSWORD,
    _env,
    _start_streamlit,
    browser,
    exceptions,
    playwright_api,
    pytestmark,
    settle,
)

TRIAL = "NCT06194448"
MARK = "report made for the media gate test"


@pytest.fixture(scope="module")
def gated(db) -> Iterator[str]:  # noqa: ANN001 - the session database must exist before the server attaches
    proc, url, _ = _start_streamlit(_env(APP_PASSWORD=PASSWORD))
    yield url
    stop_process(proc)


@pytest.fixture()
def no_delays(db) -> Iterator[None]:  # noqa: ANN001
    db.execute("DELETE FROM app.limit_failures")
    yield
    db.execute("DELETE FROM app.limit_failures")


def _locked_page(browser: Any, url: str) -> tuple[Any, Any]:  # noqa: F811
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(LOAD_TIMEOUT_MS)
    page.goto(url + "/")
    page.get_by_label("Password", exact=True).wait_for()
    return context, page


def _enter(page: Any, typed: str) -> None:
    page.get_by_label("Password", exact=True).fill(typed)
    page.get_by_role("button", name="Enter").click()


def _signed_in(browser: Any, url: str) -> tuple[Any, Any]:  # noqa: F811
    context, page = _locked_page(browser, url)
    _enter(page, PASSWORD)
    page.get_by_text("🧭 Trial Landscape").first.wait_for()
    return context, page


def test_gate_browser_wrong_tries_in_one_browser_leave_a_fresh_one_alone(
        gated: str, browser: Any, db: Any, no_delays: None) -> None:  # noqa: F811 - a fixture by name
    a_context, a = _locked_page(browser, gated)
    for n in range(1, 7):
        _enter(a, f"wrong {n}")
        a.get_by_text(f"You can try again in {duration(access.delay_after(n))}.").wait_for()
        if n < 6:  # as if browser A had waited its delay out; after the 6th it still has to wait (32 s)
            db.execute("UPDATE app.limit_failures SET next_try_at = clock_timestamp()")
    _enter(a, PASSWORD)  # A itself is still held up, even with the right password
    a.get_by_text("Too many wrong tries. Wait").wait_for()
    assert a.get_by_text("🧭 Trial Landscape").count() == 0

    b_context, b = _locked_page(browser, gated)  # a fresh browser from the same address
    _enter(b, PASSWORD)
    b.get_by_text("🧭 Trial Landscape").first.wait_for()
    assert b.get_by_text("Too many wrong tries").count() == 0
    assert exceptions(b) == []
    a_context.close()
    b_context.close()


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:  # noqa: S310 - loopback test server
            return int(response.status)
    except urllib.error.HTTPError as err:
        return err.code


def _report_url(browser: Any, url: str) -> tuple[Any, Any, str]:  # noqa: F811
    """A stored assistant session with a report, opened from its link in a browser that then signs in; the
    browser and the URL of the report's HTML download."""
    session = AssistantSession()
    session.patient_profile = {"diagnosis": "non-small cell lung cancer"}
    session.report_html = f"<h1>Your trial report</h1><p>{MARK} {TRIAL}</p>"
    SessionStore().save(session)
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(LOAD_TIMEOUT_MS)
    page.goto(f"{url}/Assistant?session={session.id}")
    _enter(page, PASSWORD)
    page.get_by_text("Your report", exact=True).wait_for()
    settle(page)
    with page.expect_download() as download:
        page.get_by_role("button", name="Download report (HTML)").click()
    return context, page, str(download.value.url)


def test_gate_browser_report_media_only_for_its_session_and_gone_at_forget(
        gated: str, browser: Any, no_delays: None) -> None:  # noqa: F811 - a fixture by name
    owner_context, owner, media_url = _report_url(browser, gated)
    assert "/media/" in media_url
    first = owner_context.request.get(media_url)
    assert first.status == 200 and MARK in first.text()

    other_context, _ = _signed_in(browser, gated)  # another signed-in browser holding the URL
    assert other_context.request.get(media_url).status == 404
    assert _status(media_url) == 403  # no cookie, never signed in

    owner.get_by_role("button", name="Forget this session").click()
    owner.get_by_text("The session was forgotten").wait_for()
    assert owner_context.request.get(media_url).status == 404  # at once, not after Streamlit's next clean-up
    assert exceptions(owner) == []
    other_context.close()
    owner_context.close()
