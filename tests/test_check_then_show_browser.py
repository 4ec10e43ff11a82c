"""Check-then-show in a real browser: an answer citing an unknown NCT id never stands on screen without its warning.

The fake Messages API streams a slow answer (one progress tool call, then text in many small deltas) that cites
an NCT id no tool returned. A MutationObserver in the page samples the DOM at every change while the turn runs and
records any moment the answer's text is visible without the grounding warning; progress messages must show
meanwhile, and the unknown id must never become a link.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from devtools.commands.bench_load_cmd import stop_process
from tests.fake_anthropic import FakeAnthropic, ScriptedTurn, text_block, tool_block
from tests.test_browser import ARGS, CHROMIUM, LOAD_TIMEOUT_MS, _env, _start_streamlit, exceptions, settle

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install -y chromium)"),
]
playwright_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed")

UNKNOWN = "NCT12345678"
CLAIM = "is recruiting in Lompoc and you are eligible"
WARNING = "did not come from any search or lookup"
PROGRESS = "Checking trial 3 of 8"

OBSERVER = """
([claim, warning, progress]) => {
  window.__cts = {samples: 0, violations: [], writing: 0, progress: 0, answered: false};
  const check = () => {
    const text = document.body.innerText;
    const s = window.__cts;
    s.samples += 1;
    if (text.includes('Writing the answer')) s.writing += 1;
    if (text.includes(progress)) s.progress += 1;
    const shown = text.includes(claim);
    if (shown) s.answered = true;
    if (shown && !text.includes(warning)) s.violations.push(text.slice(-400));
  };
  new MutationObserver(check).observe(document.body, {subtree: true, childList: true, characterData: true});
  check();
}
"""


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


@pytest.fixture(scope="module")
def model_app(db, fake: FakeAnthropic) -> Iterator[str]:  # noqa: ANN001 - the session database must exist
    proc, url, _ = _start_streamlit(_env(ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=fake.base_url))
    yield url
    stop_process(proc)


def test_check_then_show_unknown_nct_never_shows_without_its_warning(model_app: str, fake: FakeAnthropic) -> None:
    answer = " ".join([f"{UNKNOWN} {CLAIM}."] + ["It is a good match for what you told me."] * 12)
    fake.add(ScriptedTurn([tool_block("emit_status", {"message": PROGRESS})], stop_reason="tool_use"))
    fake.add(ScriptedTurn([text_block(answer)], text_pieces=40, piece_delay=0.12))

    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            page.set_default_timeout(LOAD_TIMEOUT_MS)
            page.goto(model_app + "/Assistant")
            settle(page)
            page.evaluate(OBSERVER, [CLAIM, WARNING, PROGRESS])
            box = page.get_by_test_id("stChatInputTextArea")
            box.fill("Please find trials for me near Lompoc.")
            box.press("Enter")

            # Wait on conditions: the answer and its warning are on screen and the run has finished.
            deadline = time.monotonic() + LOAD_TIMEOUT_MS / 1000
            while time.monotonic() < deadline:
                state = page.evaluate("() => window.__cts")
                if state["answered"] and not page.locator('[data-testid="stStatusWidget"]').count():
                    break
                page.wait_for_timeout(50)
            settle(page)
            state = page.evaluate("() => window.__cts")
            result = {
                "violations": state["violations"],
                "answered": state["answered"],
                "warning shown": page.get_by_text(WARNING).count() >= 1,
                "unknown id as a link": page.locator(f'a[href*="{UNKNOWN}"]').count(),
                "errors": exceptions(page),
            }
            assert result == {"violations": [], "answered": True, "warning shown": True,
                              "unknown id as a link": 0, "errors": []}
            # The page was really watched while the turn ran: progress showed while the answer was held.
            assert state["progress"] > 0 and state["writing"] > 0 and state["samples"] > 20, state
            # The warning stands in the answer's own bubble, above its text.
            bubble = page.locator('[data-testid="stChatMessage"]').filter(has_text=CLAIM).last
            text = bubble.inner_text()
            assert WARNING in text and text.index(WARNING) < text.index(CLAIM)
        finally:
            browser.close()
    assert fake.remaining == 0
