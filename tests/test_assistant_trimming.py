"""History trimming: by size, tool pairs never split, bridge note inserted, intake answers kept."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from services.assistant import AssistantSession, Orchestrator
from services.assistant.trimming import (
    BRIDGE_NOTE,
    DEFAULT_POLICY,
    INTAKE_POLICY,
    TrimPolicy,
    message_size,
    policy_for,
    trim_history,
)
from services.llm import LLMClient
from tests.fake_anthropic import FakeAnthropic
from tests.memory_backend import MemoryBackend


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def tool_round(tag: str, n_calls: int, size: int) -> list[dict[str, Any]]:
    """An assistant message asking for n_calls tools and the user message with their results."""
    uses = [
        {"type": "tool_use", "id": f"toolu_{tag}_{k}", "name": "search_trials", "input": {"q": tag}}
        for k in range(n_calls)
    ]
    results = [
        {"type": "tool_result", "tool_use_id": f"toolu_{tag}_{k}", "content": "r" * size}
        for k in range(n_calls)
    ]
    return [
        {"role": "assistant", "content": [{"type": "text", "text": f"checking {tag}"}, *uses]},
        {"role": "user", "content": results},
    ]


def long_history() -> list[dict[str, Any]]:
    """Turns of varying shape: plain exchanges and tool loops of 1-3 rounds with 1-3 calls each."""
    messages: list[dict[str, Any]] = []
    for turn in range(30):
        messages.append(user(f"question {turn} " + "q" * (200 * (turn % 4))))
        for r in range(turn % 3):
            messages.extend(tool_round(f"{turn}_{r}", 1 + (turn + r) % 3, 700 + 300 * (turn % 5)))
        messages.append(assistant(f"answer {turn} " + "a" * 400))
    return messages


def check_valid(kept: list[dict[str, Any]]) -> None:
    """The API's rules: starts with user, roles alternate, every tool_use answered in the next message and
    every tool_result answering a tool_use of the message before."""
    assert kept[0]["role"] == "user"
    assert all(a["role"] != b["role"] for a, b in zip(kept, kept[1:], strict=False))
    for i, message in enumerate(kept):
        blocks = message["content"] if isinstance(message["content"], list) else []
        if message["role"] == "assistant":
            uses = {b["id"] for b in blocks if b["type"] == "tool_use"}
            if uses and i + 1 < len(kept):
                answered = {b["tool_use_id"] for b in kept[i + 1]["content"] if b["type"] == "tool_result"}
                assert uses == answered
        else:
            results = {b["tool_use_id"] for b in blocks if b["type"] == "tool_result"}
            if results:
                assert i > 0
                asked = {b["id"] for b in kept[i - 1]["content"] if b["type"] == "tool_use"}
                assert results == asked


def test_trimming_leaves_small_history_unchanged() -> None:
    history = long_history()[:6]
    assert trim_history(history, DEFAULT_POLICY) == (history, 0)


@pytest.mark.parametrize("keep", [500, 2_000, 5_000, 9_000, 15_000, 30_000, 60_000])
def test_trimming_never_splits_a_tool_pair(keep: int) -> None:
    history = long_history()
    total = sum(message_size(m) for m in history)

    kept, dropped = trim_history(history, TrimPolicy(max_chars=keep, keep_chars=keep))

    assert 0 < dropped < len(history) and total > keep
    check_valid(kept)
    assert kept[0]["content"][0] == {"type": "text", "text": BRIDGE_NOTE}
    # Apart from the bridge, the kept part is exactly the newest messages of the history.
    tail = history[dropped:]
    if tail[0]["role"] == "user":
        assert kept[0]["content"][1:] == tail[0]["content"] and kept[1:] == tail[1:]
    else:
        assert kept[1:] == tail
    # It kept as much as fits: the earliest valid start whose tail fits, else the latest valid start.
    starts = [i for i in range(1, len(history)) if is_valid_start(history, i)]
    fitting = [i for i in starts if sum(message_size(m) for m in history[i:]) <= keep]
    assert dropped == (fitting[0] if fitting else starts[-1])


def is_valid_start(history: list[dict[str, Any]], i: int) -> bool:
    """An assistant message, or a user message that answers no tool call."""
    message = history[i]
    return message["role"] == "assistant" or not any(b["type"] == "tool_result" for b in message["content"])


def test_trimming_keeps_a_tool_loop_whole_when_it_is_the_only_tail() -> None:
    history = [user("find trials"), *tool_round("a", 2, 5000), *tool_round("b", 3, 5000)]

    kept, dropped = trim_history(history, TrimPolicy(max_chars=1000, keep_chars=1000))

    assert dropped == 3
    assert kept == [{"role": "user", "content": [{"type": "text", "text": BRIDGE_NOTE}]}, *history[3:]]
    check_valid(kept)


def test_trimming_threshold_is_larger_during_intake() -> None:
    assert policy_for("intake", intake_complete=False) == INTAKE_POLICY
    assert policy_for("intake", intake_complete=True) == DEFAULT_POLICY
    assert policy_for("matching", intake_complete=True) == DEFAULT_POLICY
    history = [m for t in range(60) for m in (user(f"{t} " + "x" * 4000), assistant(f"noted {t}"))]
    size = sum(message_size(m) for m in history)
    assert DEFAULT_POLICY.max_chars < size < INTAKE_POLICY.max_chars
    assert trim_history(history, INTAKE_POLICY) == (history, 0)
    assert trim_history(history, DEFAULT_POLICY)[1] > 0


def test_trimming_never_loses_intake_answers(fake: FakeAnthropic) -> None:
    session = AssistantSession()
    session.intake_answers = {
        "diagnosis": "Ewing sarcoma",
        "biomarkers": ["EWSR1-FLI1 fusion"],
        "travel_radius": "100 miles",
    }
    session.messages = [
        user("My son was diagnosed with Ewing sarcoma at 17."),
        assistant("I'm sorry to hear that."),
    ]
    for t in range(90):
        session.messages += [
            user(f"detail {t} " + "d" * 2500),
            *tool_round(f"t{t}", 1, 2000),
            assistant(f"noted {t}"),
        ]
    fake.add_text("Thank you, I have everything I need.")

    Orchestrator(LLMClient(api_key="k", base_url=fake.base_url), MemoryBackend()).run_turn(
        session, "That's all."
    )

    request = fake.requests[0]
    sent = request["messages"]
    assert len(sent) < len(session.messages) / 2
    assert sent[0]["content"][0] == {"type": "text", "text": BRIDGE_NOTE}
    assert "Ewing sarcoma at 17" not in json.dumps(sent)
    check_valid(sent)
    system = "\n".join(b["text"] for b in request["system"])
    context = system[system.index("# Session context") :]
    assert '"diagnosis": "Ewing sarcoma"' in context
    assert '"EWSR1-FLI1 fusion"' in context and '"travel_radius": "100 miles"' in context
    assert session.messages[0] == user("My son was diagnosed with Ewing sarcoma at 17.")
