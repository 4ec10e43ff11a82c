"""AssistantSession: unguessable ids, exact JSON round trip, refusal of corrupt data."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from services.assistant import AssistantSession, ChatEntry
from services.errors import BadInput


def populated() -> AssistantSession:
    session = AssistantSession(phase="followup")
    session.flags.update(
        intake_complete=True,
        search_complete=True,
        matching_complete=True,
        selection_complete=True,
        report_complete=True,
    )
    session.intake_answers = {"diagnosis": "Brustkrebs — HER2+", "treatments": ["surgery", "AC-T"], "age": 52}
    session.patient_profile = {
        "diagnosis": "breast cancer",
        "age": 52,
        "latitude": 42.3601,
        "longitude": -71.0589,
        "ecog": 1,
    }
    session.filters = {"condition": "breast cancer", "radius": 100.5, "near": "Boston, MA"}
    session.messages = [
        {"role": "user", "content": [{"type": "text", "text": "Hallo 👋 I'm 52"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Let me search."}, {"type": "tool_use", "id": "toolu_1", "name": "search_trials", "input": {"strategy": "exact", "condition": "breast cancer"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": '{"trials": []}', "is_error": False}]},
        {"role": "assistant", "content": [{"type": "text", "text": "NCT00000001 looks relevant."}]},
    ]  # fmt: skip
    session.candidates = {
        "NCT00000001": {"nct_id": "NCT00000001", "title": "Olaparib", "strategies": ["exact"]}
    }
    session.matched_trials = [
        {"nct_id": "NCT00000001", "fit_score": 82, "verdict": "eligible", "criteria": [], "unknowns": []}
    ]
    session.selected_nct_ids = ["NCT00000001"]
    session.report_html = "<html><body>Report — ünïcode</body></html>"
    session.seen_nct_ids = ["NCT00000001"]
    session.widgets = {
        "w1": {"widget_id": "w1", "field": "sex", "options": ["Female", "Male"], "answer": "Female"}
    }
    session.settings.model = "claude-opus-5-5"
    session.settings.max_tokens = 4000
    session.settings.trimming = False
    session.usage.add({"input_tokens": 1200, "output_tokens": 300, "cache_read_input_tokens": 900}, calls=3)
    return session


def test_session_id_is_an_unguessable_token() -> None:
    ids = {AssistantSession().id for _ in range(200)}
    assert len(ids) == 200
    assert all(
        len(i) >= 43 and set(i) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        for i in ids
    )


def test_session_json_round_trip_is_exact() -> None:
    session = populated()

    text = session.to_json()
    again = AssistantSession.from_json(text)

    assert again == session
    assert again.to_json() == text
    assert again.created_at.tzinfo is not None and isinstance(again.updated_at, datetime)
    assert AssistantSession.from_json(AssistantSession().to_json()).flags == dict.fromkeys(
        ["intake_complete", "search_complete", "matching_complete", "selection_complete", "report_complete"],
        False,
    )


def test_session_chat_log_hides_tool_traffic() -> None:
    assert populated().chat_log() == [
        ChatEntry("user", "Hallo 👋 I'm 52"),
        ChatEntry("assistant", "Let me search."),
        ChatEntry("assistant", "NCT00000001 looks relevant."),
    ]


def test_session_seed_from_dashboard_fills_filters_and_answers() -> None:
    session = AssistantSession()
    session.seed_from_dashboard(
        {"condition": "asthma", "age": 40, "phase": ["PHASE2"], "near": "", "sex": "FEMALE"}
    )
    assert session.filters == {"condition": "asthma", "age": 40, "sex": "FEMALE"}
    assert session.intake_answers == {
        "dashboard_condition": "asthma",
        "dashboard_age": 40,
        "dashboard_sex": "FEMALE",
    }


def _edit(change: Callable[[dict[str, Any]], None]) -> str:
    data = json.loads(populated().to_json())
    change(data)
    return json.dumps(data)


CORRUPT: list[tuple[str, str | bytes, str]] = [
    ("not json", "{not json",
     "Assistant session data is not valid JSON: Expecting property name enclosed in double quotes: line 1 "
     "column 2 (char 1)"),
    ("truncated", populated().to_json()[:-40], "Assistant session data is not valid JSON"),
    ("not an object", "[1, 2]", "Assistant session data is corrupt: $ must be a JSON object."),
    ("bad phase", _edit(lambda d: d.update(phase="shopping")),
     'Assistant session data is corrupt: $.phase: must be one of intake, search, matching, selection, '
     'report, followup, got "shopping".'),
    ("short id", _edit(lambda d: d.update(id="ABC123")),
     "Assistant session data is corrupt: $.id: string should match pattern '^[A-Za-z0-9_-]{43,}$', got "
     "\"ABC123\"."),
    ("missing field", _edit(lambda d: d.pop("messages")),
     "Assistant session data is corrupt: $: missing required field 'messages'."),
    ("unknown field", _edit(lambda d: d.update(extra=1)),
     "Assistant session data is corrupt: $: unknown field 'extra'."),
    ("flag not bool", _edit(lambda d: d["flags"].update(intake_complete="yes")),
     'Assistant session data is corrupt: $.flags.intake_complete: input should be a valid boolean, got '
     '"yes".'),
    ("bad role", _edit(lambda d: d["messages"][1].update(role="system")),
     "Assistant session data is corrupt: $.messages[1].role: input should be 'user' or 'assistant', got "
     "\"system\"."),
    ("block without type", _edit(lambda d: d["messages"][0]["content"].append({"text": "x"})),
     "Assistant session data is corrupt: $.messages[0].content[1]: missing required field 'type'."),
    ("bad selected id", _edit(lambda d: d.update(selected_nct_ids=["NCT1"])),
     "Assistant session data is corrupt: $.selected_nct_ids[0]: string should match pattern '^NCT\\d{8}$', "
     "got \"NCT1\"."),
    ("negative usage", _edit(lambda d: d["usage"].update(output_tokens=-1)),
     "Assistant session data is corrupt: $.usage.output_tokens: input should be greater than or equal to 0, "
     "got -1."),
    ("bool max_tokens", _edit(lambda d: d["settings"].update(max_tokens=True)),
     "Assistant session data is corrupt: $.settings.max_tokens: input should be a valid integer, got true."),
    ("naive time", _edit(lambda d: d.update(created_at="2026-11-21T10:00:00")),
     'Assistant session data is corrupt: $.created_at: must include a time zone, got "2026-11-21T10:00:00".'),
    ("bad time", _edit(lambda d: d.update(updated_at="yesterday")),
     'Assistant session data is corrupt: $.updated_at: is not an ISO timestamp, got "yesterday".'),
    ("other version", _edit(lambda d: d.update(version=2)),
     "Assistant session data is corrupt: $.version: input should be 1, got 2."),
    ("matched without id", _edit(lambda d: d["matched_trials"].append({"fit_score": 3})),
     "Assistant session data is corrupt: $.matched_trials[1]: missing required field 'nct_id'."),
    ("bad bytes", b"\xff\xfe{", "Assistant session data is not valid JSON"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "message"), [(t, m) for _, t, m in CORRUPT], ids=[c[0] for c in CORRUPT])
def test_session_refuses_corrupt_json(text: str | bytes, message: str) -> None:
    with pytest.raises(BadInput) as caught:
        AssistantSession.from_json(text)
    assert str(caught.value).startswith(message)


def test_session_to_json_refuses_values_json_cannot_hold() -> None:
    session = AssistantSession()
    session.patient_profile["weight"] = float("nan")
    with pytest.raises(BadInput, match="holds a value JSON cannot store"):
        session.to_json()


def test_session_timestamps_are_utc_and_touch_moves_updated_at() -> None:
    session = AssistantSession()
    before = session.updated_at
    session.touch()
    assert session.created_at.tzinfo == UTC and session.updated_at >= before


def test_session_stored_model_mirrors_the_session() -> None:
    """StoredSession checks what to_dict writes: every field of the session, every flag and every usage
    counter, so a field added to the session without its check fails here instead of loading unchecked."""
    from dataclasses import fields

    from services.assistant.session import FLAGS, StoredSession, UsageCounters

    stored = StoredSession.model_fields
    assert set(stored) == {"version"} | {f.name for f in fields(AssistantSession)}
    assert tuple(stored["flags"].annotation.model_fields) == FLAGS  # type: ignore[union-attr]
    assert tuple(stored["usage"].annotation.model_fields) == tuple(  # type: ignore[union-attr]
        f.name for f in fields(UsageCounters))


def test_session_stored_before_the_search_log_still_loads() -> None:
    data = json.loads(populated().to_json())
    del data["searches"]
    assert AssistantSession.from_json(json.dumps(data)).searches == []
