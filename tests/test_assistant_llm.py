"""The thin SDK client: reply dicts, usage counts, readable errors (through the local fake API)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from services.errors import AssistantUnavailable
from services.llm import LLMClient, TokenUsage, count_usage
from tests.fake_anthropic import FakeAnthropic, ScriptedError, ScriptedTurn, text_block, tool_block

ARGS = {
    "model": "claude-sonnet-5-5",
    "max_tokens": 100,
    "system": "Be brief.",
    "messages": [{"role": "user", "content": "hi"}],
}


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


def test_llm_create_and_stream_return_the_same_reply_dict(fake: FakeAnthropic) -> None:
    turn = ScriptedTurn(
        [
            text_block("Looking now."),
            tool_block("search_trials", {"strategy": "exact", "condition": "gout"}, "toolu_1"),
        ],
        "tool_use",
    )
    fake.add(turn).add(turn)
    client = LLMClient(api_key="k", base_url=fake.base_url)
    deltas: list[str] = []

    created = client.create(**ARGS)
    streamed = client.stream(**ARGS, on_text=deltas.append)

    expected_content = [
        {"type": "text", "text": "Looking now."},
        {
            "type": "tool_use",
            "id": "toolu_1",
            "name": "search_trials",
            "input": {"strategy": "exact", "condition": "gout"},
        },
    ]
    assert created["content"] == expected_content == streamed["content"]
    assert created["stop_reason"] == streamed["stop_reason"] == "tool_use"
    assert "".join(deltas) == "Looking now." and len(deltas) == 3
    assert count_usage(streamed) == count_usage(created)
    assert [r.get("stream") for r in fake.requests] == [None, True]


def test_llm_count_usage_reads_all_counters() -> None:
    reply = {
        "usage": {
            "input_tokens": 10,
            "output_tokens": 4,
            "cache_read_input_tokens": 7,
            "cache_creation_input_tokens": None,
        }
    }
    assert count_usage(reply) == TokenUsage(10, 4, 0, 7)
    assert count_usage({}) + TokenUsage(1, 2, 3, 4) == TokenUsage(1, 2, 3, 4)


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (401, "The model service rejected the API key (HTTP 401). Check ANTHROPIC_API_KEY."),
        (400, "The model service refused the request (HTTP 400): messages: roles must alternate"),
        (
            404,
            "The model service does not know this model or address (HTTP 404): messages: roles must alternate",
        ),
        (529, "The model service is overloaded (HTTP 529) (after 1 retry). Try again shortly."),
    ],
)
def test_llm_errors_become_assistant_unavailable_with_a_reason(
    fake: FakeAnthropic, status: int, message: str
) -> None:
    fake.add(ScriptedError(status, "messages: roles must alternate")).add(
        ScriptedError(status, "messages: roles must alternate")
    )
    client = LLMClient(api_key="k", base_url=fake.base_url, max_retries=1)
    with pytest.raises(AssistantUnavailable) as caught:
        client.stream(**ARGS)
    assert str(caught.value) == message


def test_llm_without_api_key_says_how_to_fix_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(
        AssistantUnavailable, match=r"No Anthropic API key is configured \(set ANTHROPIC_API_KEY\)\."
    ) as caught:
        LLMClient()
    assert "guided mode" in caught.value.hint
