"""The assistant loop end to end through the SDK against the local fake Messages API."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from services.assistant import (
    AssistantSession,
    Callbacks,
    GroundingWarning,
    Orchestrator,
    TrialSelection,
    WidgetAnswer,
)
from services.llm import LLMClient
from tests.fake_anthropic import FakeAnthropic, ScriptedTurn, text_block
from tests.memory_backend import MemoryBackend


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


def make(
    fake: FakeAnthropic, backend: MemoryBackend | None = None, callbacks: Callbacks | None = None, **kw: Any
) -> Orchestrator:
    llm = LLMClient(api_key="test-key", base_url=fake.base_url, max_retries=kw.pop("max_retries", 2))
    return Orchestrator(llm, backend or MemoryBackend(), callbacks, **kw)


def system_text(request: dict[str, Any]) -> str:
    return "\n\n".join(block["text"] for block in request["system"])


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    last = request["messages"][-1]
    assert last["role"] == "user"
    return [b for b in last["content"] if b["type"] == "tool_result"]


def profiled_session(phase: str = "intake") -> AssistantSession:
    session = AssistantSession(phase=phase)
    session.patient_profile = {
        "diagnosis": "breast cancer",
        "age": 52,
        "sex": "female",
        "location": "Boston, MA",
        "latitude": 42.3601,
        "longitude": -71.0589,
    }
    session.flags["intake_complete"] = True
    return session


def test_orchestrator_phase_change_reaches_next_system_prompt(fake: FakeAnthropic) -> None:
    fake.add_tools(("update_session_phase", {"phase": "search", "reason": "profile confirmed"}))
    fake.add_text("Thank you. I will now look for trials.")
    session = profiled_session("intake")

    result = make(fake).run_turn(session, "Yes, that summary is right.")

    assert result.error is None
    assert session.phase == "search"
    first, second = (system_text(r) for r in fake.requests)
    assert ("# Phase: intake" in first, "# Phase: search" in first) == (True, False)
    assert ("# Phase: intake" in second, "# Phase: search" in second) == (False, True)
    assert "Current phase: intake" in first and "Current phase: search" in second
    assert result.events == [{"type": "phase", "phase": "search", "previous": "intake"}]


def test_orchestrator_refuses_sixteenth_model_call(fake: FakeAnthropic) -> None:
    for i in range(16):
        fake.add_tools(("emit_status", {"message": f"step {i + 1}"}))
    statuses: list[str] = []
    session = AssistantSession()

    result = make(fake, callbacks=Callbacks(on_status=statuses.append)).run_turn(session, "hello")

    assert result.model_calls == 15
    assert len(fake.requests) == 15 and fake.remaining == 1
    assert statuses == [f"step {i + 1}" for i in range(15)]
    assert [w.code for w in result.warnings] == ["step_limit"]
    assert result.text.endswith('Send "continue" and I will carry on from here.')
    # The 15th call's tool ran and has its result, so the history stays valid for the next message.
    assert session.messages[-1]["content"][0]["type"] == "tool_result"
    fake.add_text("Carrying on.")
    more = make(fake).run_turn(session, "continue")
    last_user = fake.requests[15]["messages"][-1]["content"]
    assert [b["type"] for b in last_user] == ["tool_result", "text"]
    assert (more.text, more.model_calls, more.warnings) == ("Carrying on.", 2, [])


@pytest.mark.parametrize(("status", "streaming"), [(429, False), (429, True), (529, False)])
def test_orchestrator_retries_rate_limit_then_succeeds(
    fake: FakeAnthropic, status: int, streaming: bool
) -> None:
    fake.add_error(status).add_text("Hello, I am here to help.")
    session = AssistantSession()
    deltas: list[str] = []
    callbacks = Callbacks(on_text=deltas.append) if streaming else None

    result = make(fake, callbacks=callbacks, max_retries=2).run_turn(session, "hi")

    assert (result.text, result.error, result.model_calls) == ("Hello, I am here to help.", None, 1)
    assert len(fake.requests) == 2
    assert fake.requests[0] == fake.requests[1]
    assert [h["x-stainless-retry-count"] for h in fake.request_headers] == ["0", "1"]
    assert "".join(deltas) == ("Hello, I am here to help." if streaming else "")
    assert [m["role"] for m in session.messages] == ["user", "assistant"]


def test_orchestrator_rate_limit_beyond_retries_is_a_clear_error(fake: FakeAnthropic) -> None:
    fake.add_error(429, times=3)
    session = AssistantSession()

    result = make(fake, max_retries=2).run_turn(session, "hi")

    assert result.error == (
        "The model service is rate-limiting requests (HTTP 429) (after 2 retries). Wait a minute and retry. "
        "The assistant's model service cannot be reached. Your session is kept; try again later or use guided mode."
    )
    assert len(fake.requests) == 3


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_orchestrator_unreachable_api_keeps_session_intact(fake: FakeAnthropic) -> None:
    session = profiled_session("search")
    session.messages = [
        {"role": "user", "content": [{"type": "text", "text": "I have breast cancer."}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Thank you for telling me."}]},
    ]
    before = json.loads(session.to_json())
    llm = LLMClient(api_key="test-key", base_url=f"http://127.0.0.1:{_closed_port()}", max_retries=0)

    result = Orchestrator(llm, MemoryBackend()).run_turn(session, "Please search now.")

    assert result.error is not None and result.error.startswith(
        "Cannot connect to the model service at http://127.0.0.1:"
    )
    assert "Your session is kept" in result.error
    assert (result.text, result.model_calls, result.events) == ("", 0, [])
    after = json.loads(session.to_json())
    assert after["messages"] == [
        *before["messages"],
        {"role": "user", "content": [{"type": "text", "text": "Please search now."}]},
    ]
    assert {k: v for k, v in after.items() if k not in ("messages", "updated_at")} == {
        k: v for k, v in before.items() if k not in ("messages", "updated_at")
    }
    assert AssistantSession.from_json(session.to_json()) == session

    # Once the service is back, the next message joins the unanswered one and the turn completes.
    fake.add_text("Sorry for the wait. Searching now.")
    retry = make(fake).run_turn(session, "Are you there?")
    assert retry.error is None
    assert fake.requests[0]["messages"][-1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "Please search now."},
            {"type": "text", "text": "Are you there?"},
        ],
    }
    assert [m["role"] for m in session.messages] == ["user", "assistant", "user", "assistant"]


def test_orchestrator_warns_about_nct_id_not_in_tool_results(fake: FakeAnthropic) -> None:
    fake.add_tools(("search_trials", {"strategy": "exact", "condition": "breast cancer"}))
    fake.add_text("I found NCT00000001, which tests olaparib, and NCT12345678, which looks promising.")
    session = profiled_session("search")

    result = make(fake).run_turn(session, "What did you find?")

    assert result.warnings == [
        GroundingWarning(
            "unknown_nct",
            "The answer mentions NCT12345678, which did not come from any search or lookup in this session. "
            "Check it on ClinicalTrials.gov before relying on it.",
        )
    ]
    assert session.seen_nct_ids == ["NCT00000001", "NCT00000002"]


def test_orchestrator_warns_about_trial_claim_without_lookup(fake: FakeAnthropic) -> None:
    fake.add_text("I found 3 trials near you, and you are likely eligible for the first one.")
    session = profiled_session("search")

    result = make(fake).run_turn(session, "Anything for me?")

    # "3 trials" is a count no tool result gave, so the claim checks flag it as well
    assert [w.code for w in result.warnings] == ["uncited_claim", "no_lookup", "unchecked_claim"]
    assert result.flagged == ["I found 3 trials near you, and you are likely eligible for the first one."]


def test_orchestrator_bad_tool_argument_is_returned_and_corrected(fake: FakeAnthropic) -> None:
    fake.add_tools(
        ("search_trials", {"strategy": "exact", "condition": "breast cancer", "limit": 99, "radius": 50})
    )
    fake.add_tools(("search_trials", {"strategy": "exact", "condition": "breast cancer", "limit": 10}))
    fake.add_text("NCT00000001 and NCT00000002 are both about breast cancer.")
    session = profiled_session("search")

    result = make(fake).run_turn(session, "Search please")

    first = tool_results(fake.requests[1])
    assert len(first) == 1 and first[0]["is_error"] is True
    assert json.loads(first[0]["content"]) == {
        "error": "Invalid arguments for search_trials; fix these and call again.",
        "problems": [
            "$.limit: input should be less than or equal to 15, got 99",
            "$: unknown field 'radius' (allowed: condition, intervention, latitude, longitude, radius_miles, "
            "phases, statuses, age, sex, country, strategy, limit, page)",
        ],
    }
    second = tool_results(fake.requests[2])
    assert "is_error" not in second[0]
    found = json.loads(second[0]["content"])
    assert [t["nct_id"] for t in found["trials"]] == ["NCT00000001", "NCT00000002"]
    assert "dropped_not_about_condition" not in found  # the condition is checked in the search, before the limit
    assert (result.error, result.warnings, result.model_calls) == (None, [], 3)


def test_orchestrator_streams_text_through_callback(fake: FakeAnthropic) -> None:
    fake.add_tools(("emit_status", {"message": "Looking"}), text="Let me look that up for you.")
    fake.add_text("Here is what a phase 2 trial means: it checks whether a treatment works.")
    deltas: list[str] = []
    session = AssistantSession()

    result = make(fake, callbacks=Callbacks(on_text=deltas.append)).run_turn(session, "What is phase 2?")

    assert all(r["stream"] is True for r in fake.requests)
    assert len(deltas) > 2
    assert (
        "".join(deltas)
        == result.text
        == (
            "Let me look that up for you.\n\nHere is what a phase 2 trial means: it checks whether a treatment works."
        )
    )


def test_orchestrator_runs_independent_tool_calls_concurrently(fake: FakeAnthropic) -> None:
    # Each gated call waits until the other has started: run one after the other, the first would time out.
    backend = MemoryBackend(gate=threading.Barrier(2, timeout=5), gated=frozenset({"get_trial_details"}))
    fake.add_tools(
        ("get_trial_details", {"nct_id": "NCT00000001"}), ("get_trial_details", {"nct_id": "NCT00000002"})
    )
    fake.add_text("Both trials NCT00000001 and NCT00000002 are open.")
    session = profiled_session("matching")

    result = make(fake, backend).run_turn(session, "Tell me more")

    results = tool_results(fake.requests[1])
    assert [("is_error" in r, json.loads(r["content"])["nct_id"]) for r in results] == [
        (False, "NCT00000001"),
        (False, "NCT00000002"),
    ]
    kinds = [entry[0] for entry in sorted(backend.log, key=lambda e: e[3])]
    assert kinds == ["start", "start", "end", "end"]
    assert result.error is None


def test_orchestrator_delivers_events_after_text_and_status_at_once(fake: FakeAnthropic) -> None:
    fake.add_tools(
        ("emit_status", {"message": "Noting your answer"}),
        (
            "emit_widget",
            {
                "field": "sex",
                "question": "What sex were you assigned at birth?",
                "widget_type": "single_select",
                "options": ["Female", "Male"],
            },
        ),
        ("emit_partial_filters", {"condition": "breast cancer"}),
        ("emit_partial_filters", {"age": 52}),
        text="Thank you.",
    )
    fake.add_text("Please pick one of the choices below.")
    timeline: list[tuple[str, Any]] = []
    callbacks = Callbacks(
        on_text=lambda t: timeline.append(("text", t)),
        on_status=lambda s: timeline.append(("status", s)),
        on_event=lambda e: timeline.append(("event", e["type"])),
    )
    session = AssistantSession()

    result = make(fake, callbacks=callbacks).run_turn(session, "I have breast cancer and I am 52.")

    kinds = [kind for kind, _ in timeline]
    first_status = kinds.index("status")
    assert "text" in kinds[:first_status] and "text" in kinds[first_status:]
    assert kinds[-2:] == ["event", "event"] and "event" not in kinds[:-2]
    assert result.events == [
        {
            "type": "widget",
            "widget_id": "w1",
            "field": "sex",
            "question": "What sex were you assigned at birth?",
            "widget_type": "single_select",
            "options": ["Female", "Male"],
            "allow_other": False,
        },
        {"type": "filters", "filters": {"condition": "breast cancer", "age": 52}},
    ]
    assert session.filters == {"condition": "breast cancer", "age": 52}


def test_orchestrator_widget_answer_is_kept_in_session_state(fake: FakeAnthropic) -> None:
    fake.add_tools(
        (
            "emit_widget",
            {
                "field": "activity_level",
                "question": "How active are you day to day?",
                "widget_type": "single_select",
            },
        )
    )
    fake.add_text("Thanks, that helps.")
    session = AssistantSession()
    orchestrator = make(fake)
    orchestrator.run_turn(session, "Ask me the next question")
    options = session.widgets["w1"]["options"]
    fake.add_text("Thank you. Next, where do you live?")

    result = orchestrator.run_turn(session, WidgetAnswer("w1", (options[1],)))

    assert result.error is None
    assert session.intake_answers["activity_level"] == options[1]
    assert (session.patient_profile["activity_level"], session.patient_profile["ecog"]) == (options[1], 1)
    assert fake.requests[-1]["messages"][-1]["content"][-1] == {
        "type": "text",
        "text": f"My answer to \u201cHow active are you day to day?\u201d: {options[1]}",
    }
    refused = orchestrator.run_turn(session, WidgetAnswer("w1", ("Something else",)))
    assert refused.error == "Not one of the offered choices: Something else."


def test_orchestrator_report_waits_for_patient_selection(fake: FakeAnthropic) -> None:
    session = profiled_session("selection")
    session.seen_nct_ids = ["NCT00000001", "NCT00000002"]
    session.matched_trials = [
        {
            "nct_id": "NCT00000001",
            "fit_score": 80,
            "verdict": "eligible",
            "summary": "s",
            "criteria": [],
            "unknowns": [],
        },
        {
            "nct_id": "NCT00000002",
            "fit_score": 40,
            "verdict": "uncertain",
            "summary": "s",
            "criteria": [],
            "unknowns": [],
        },
    ]
    fake.add_tools(("update_session_phase", {"phase": "report"}))
    fake.add_text("Take your time choosing; tick the trials you want on the cards.")
    orchestrator = make(fake)

    orchestrator.run_turn(session, "Just pick for me")

    assert session.phase == "selection"
    assert json.loads(tool_results(fake.requests[1])[0]["content"]) == {
        "error": "Cannot move to report yet: the patient has not chosen any trials. Show the trial cards and wait for their choice."
    }
    assert orchestrator.run_turn(session, TrialSelection(("NCT09999999",))).error == (
        "These trials were not among the assessed trials: NCT09999999."
    )
    fake.add_tools(("update_session_phase", {"phase": "report"}))
    fake.add_text("Thank you, I will prepare your report about NCT00000001.")
    orchestrator.run_turn(session, TrialSelection(("nct00000001",)))
    assert (session.phase, session.selected_nct_ids, session.flags["selection_complete"]) == (
        "report",
        ["NCT00000001"],
        True,
    )


def test_orchestrator_uses_session_model_and_cache_breakpoints(fake: FakeAnthropic) -> None:
    fake.add_text("Hello.")
    session = AssistantSession()
    session.settings.model = "claude-opus-5-5"
    session.settings.max_tokens = 1234

    result = make(fake).run_turn(session, "hi")

    request = fake.requests[0]
    assert (request["model"], request["max_tokens"]) == ("claude-opus-5-5", 1234)
    assert [b.get("cache_control") for b in request["system"]] == [{"type": "ephemeral"}, None, None]
    assert [t.get("cache_control") for t in request["tools"]] == [None] * 14 + [{"type": "ephemeral"}]
    assert result.usage["input_tokens"] > 0 and session.usage.model_calls == 1
    assert session.usage.input_tokens == result.usage["input_tokens"]


def test_orchestrator_warns_when_answer_is_cut_off(fake: FakeAnthropic) -> None:
    fake.add(ScriptedTurn([text_block("The first trial is about")], stop_reason="max_tokens"))

    result = make(fake).run_turn(AssistantSession(), "Tell me everything")

    assert [w.code for w in result.warnings] == ["cut_off"]


def test_orchestrator_trimming_can_be_switched_off(fake: FakeAnthropic) -> None:
    session = profiled_session("followup")
    big = "x" * 5000
    for i in range(60):
        session.messages.append({"role": "user", "content": [{"type": "text", "text": f"{i} {big}"}]})
        session.messages.append({"role": "assistant", "content": [{"type": "text", "text": f"ok {i}"}]})
    fake.add_text("One.").add_text("Two.")
    orchestrator = make(fake)

    session.settings.trimming = False
    orchestrator.run_turn(session, "first")
    session.settings.trimming = True
    orchestrator.run_turn(session, "second")

    untrimmed, trimmed = fake.requests
    assert len(untrimmed["messages"]) == 121
    assert untrimmed["messages"] == session.messages[:121]
    assert len(trimmed["messages"]) < 60
    assert trimmed["messages"][0]["content"][0]["text"].startswith("[Earlier messages of this conversation")


class WaitingBackend(MemoryBackend):
    """A backend whose lookup only finishes once the page has been told it is still working."""

    def __init__(self, released: threading.Event) -> None:
        super().__init__()
        self.released = released

    def get_eligibility_criteria(self, nct_id: str):  # type: ignore[no-untyped-def]
        assert self.released.wait(timeout=5), "no heartbeat arrived while the tool was running"
        return super().get_eligibility_criteria(nct_id)


def test_orchestrator_sends_heartbeat_while_a_lookup_runs(fake: FakeAnthropic) -> None:
    released = threading.Event()
    statuses: list[str] = []

    def on_status(message: str) -> None:
        statuses.append(message)
        released.set()

    fake.add_tools(("get_eligibility_criteria", {"nct_id": "NCT00000001"}))
    fake.add_text("NCT00000001 needs a BRCA mutation.")
    orchestrator = make(
        fake, WaitingBackend(released), Callbacks(on_status=on_status), heartbeat_seconds=0.01
    )

    result = orchestrator.run_turn(profiled_session("matching"), "What does it need?")

    assert statuses and statuses[0].startswith("Still working on get_eligibility_criteria… (")
    assert "is_error" not in tool_results(fake.requests[1])[0]
    assert result.warnings == []
