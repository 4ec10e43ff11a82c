"""Issue 37's false claims in a real browser: the fake Messages API looks up a trial, tries to save an
invented criterion (refused), then answers "you are eligible for NCT…, which recruits in Houston and has a
90% response rate". A MutationObserver samples the DOM at every change while the turn runs: the claim never
stands on screen without the "Not checked" warning, and the sentence itself is marked "Not checked" with
its NCT id left unlinked."""

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
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install -y chromium)"
    ),
]
playwright_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed")

TRIAL = "NCT06194448"  # a sample trial (osimertinib, NSCLC) with no site in Houston
CLAIM = f"You are eligible for {TRIAL}, which recruits in Houston and has a 90% response rate."
BANNER = "Not checked: some statements in this answer"
MARK = "Not checked:"

OBSERVER = """
([claim, banner]) => {
  window.__claims = {samples: 0, violations: [], answered: false};
  const check = () => {
    const text = document.body.innerText;
    const s = window.__claims;
    s.samples += 1;
    const shown = text.includes(claim);
    if (shown) s.answered = true;
    if (shown && !text.includes(banner)) s.violations.push(text.slice(-400));
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


def test_claims_false_claims_are_marked_not_checked_in_the_browser(
    model_app: str, fake: FakeAnthropic
) -> None:
    from services.assistant.backend import DatabaseBackend

    sites = DatabaseBackend().get_trial_locations(TRIAL, None) or []
    assert sites and not [s for s in sites if str(s.get("city")).lower() == "houston"]  # the claim is false
    invented = {
        "nct_id": TRIAL,
        "verdict": "eligible",
        "summary": "A good fit.",
        "unknowns": [],
        "criteria": [{"type": "inclusion", "criterion": "Has heart failure", "status": "met", "plain": "p"}],
    }
    fake.add(
        ScriptedTurn(
            [
                tool_block("get_trial_locations", {"nct_id": TRIAL}),
                tool_block("get_eligibility_criteria", {"nct_id": TRIAL}),
            ],
            stop_reason="tool_use",
        )
    )
    fake.add(
        ScriptedTurn([tool_block("save_matched_trials", {"trials": [invented]})], stop_reason="tool_use")
    )
    fake.add(
        ScriptedTurn([text_block(f"Good news. {CLAIM} Ask me about it.")], text_pieces=20, piece_delay=0.05)
    )

    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            page.set_default_timeout(LOAD_TIMEOUT_MS)
            page.goto(model_app + "/Assistant")
            settle(page)
            page.evaluate(OBSERVER, [CLAIM, BANNER])
            box = page.get_by_test_id("stChatInputTextArea")
            box.fill("Which trial is best for me?")
            box.press("Enter")
            deadline = time.monotonic() + LOAD_TIMEOUT_MS / 1000
            while (
                time.monotonic() < deadline
            ):  # wait on conditions: the answer is shown and the run has ended
                state = page.evaluate("() => window.__claims")
                if state["answered"] and not page.locator('[data-testid="stStatusWidget"]').count():
                    break
                page.wait_for_timeout(50)
            settle(page)
            state = page.evaluate("() => window.__claims")
            bubble = page.locator('[data-testid="stChatMessage"]').filter(has_text=CLAIM).last
            text = bubble.inner_text()
            result = {
                "violations": state["violations"],
                "answered": state["answered"],
                "banner in the bubble, above the claim": BANNER in text
                and text.index(BANNER) < text.index(CLAIM),
                "sentence marked": f"{MARK} {CLAIM}" in text,
                "banner names": [
                    w for w in ("Houston", "90%", f"no eligibility check of {TRIAL}") if w in text
                ],
                "id as a link in the marked sentence": bubble.locator(f'a[href*="{TRIAL}"]').count(),
                "errors": exceptions(page),
            }
            assert result == {
                "violations": [],
                "answered": True,
                "banner in the bubble, above the claim": True,
                "sentence marked": True,
                "banner names": ["Houston", "90%", f"no eligibility check of {TRIAL}"],
                "id as a link in the marked sentence": 0,
                "errors": [],
            }
            assert state["samples"] > 5, state
        finally:
            browser.close()
    assert fake.remaining == 0
    refused = [b for b in fake.requests[2]["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert [b.get("is_error") for b in refused] == [True] and "Has heart failure" in refused[0]["content"]
