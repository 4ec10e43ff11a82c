"""System prompt assembly: base + phase + skills + session context, read from disk on every call."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.assistant import AssistantSession
from services.assistant import prompts as prompts_module
from services.assistant.prompts import PHASE_PROMPTS, build_system, load_prompt, render_context


def headings(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("# ")]


@pytest.mark.parametrize(
    ("phase", "expected"),
    [
        ("intake", ["# Phase: intake — getting to know the patient"]),
        ("search", ["# Phase: search — finding candidate trials"]),
        ("matching", ["# Phase: matching — checking each trial against the patient", "# Skill: reading eligibility criteria", "# Skill: plain language"]),
        ("selection", ["# Phase: selection — the patient chooses"]),
        ("report", ["# Phase: report — the summary for the doctor", "# Skill: plain language"]),
        ("followup", ["# Phase: followup — after the report", "# Skill: reading eligibility criteria", "# Skill: plain language"]),
    ],
)  # fmt: skip
def test_prompts_system_is_base_phase_skills_and_context(phase: str, expected: list[str]) -> None:
    blocks = build_system(AssistantSession(phase=phase))
    assert [headings(b["text"]) for b in blocks] == [
        ["# Who you are", "# How the conversation works", "# Rules that always apply"],
        expected,
        ["# Session context"],
    ]
    assert blocks[0]["cache_control"] == {"type": "ephemeral"} and "cache_control" not in blocks[1]


def test_prompts_every_file_exists_and_is_substantial() -> None:
    names = {"base"} | {n for names in PHASE_PROMPTS.values() for n in names}
    assert names == {"base", "intake", "search", "matching", "selection", "report", "followup", "skill_eligibility_analysis", "skill_plain_language"}  # fmt: skip
    for name in names:
        assert len(load_prompt(name).split()) > 100


def test_prompts_are_read_from_disk_on_every_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for file in prompts_module.PROMPT_DIR.glob("*.md"):
        (tmp_path / file.name).write_text(file.read_text())
    monkeypatch.setattr(prompts_module, "PROMPT_DIR", tmp_path)
    session = AssistantSession(phase="search")
    assert "EDITED" not in build_system(session)[1]["text"]
    (tmp_path / "search.md").write_text("# Phase: search\nEDITED")
    assert build_system(session)[1]["text"] == "# Phase: search\nEDITED"


def test_prompts_context_block_lists_session_state() -> None:
    session = AssistantSession(phase="selection")
    session.flags.update(intake_complete=True, search_complete=True, matching_complete=True)
    session.patient_profile = {"diagnosis": "asthma", "age": 30}
    session.intake_answers = {"diagnosis": "asthma", "patient_said": ["I have asthma"]}
    session.filters = {"condition": "asthma"}
    session.candidates = {"NCT00000001": {"title": "Inhaler study", "strategies": ["exact", "broader"]}}
    session.matched_trials = [{"nct_id": "NCT00000001", "fit_score": 70, "verdict": "uncertain"}]
    session.widgets = {"w1": {"widget_id": "w1", "field": "sex", "question": "Sex?", "answer": "Female"}, "w2": {"widget_id": "w2", "field": "phases", "question": "Which phases?"}}  # fmt: skip

    assert render_context(session) == "\n".join(
        [
            "# Session context",
            "Current phase: selection",
            "Completed: intake_complete=yes, search_complete=yes, matching_complete=yes, selection_complete=no, report_complete=no",
            "",
            "## Patient profile (saved)",
            '{\n "age": 30,\n "diagnosis": "asthma"\n}',
            "",
            "## Intake answers not already in the profile",
            '{\n "patient_said": [\n  "I have asthma"\n ]\n}',
            "",
            "## Dashboard filters now applied",
            '{\n "condition": "asthma"\n}',
            "",
            "## Choices shown and not yet answered",
            "- w2 (phases): Which phases?",
            "",
            "## Candidate trials found: 1",
            "- NCT00000001: Inhaler study [exact, broader]",
            "",
            "## Scored trials: 1 (highest fit first)",
            "- NCT00000001: fit 70, uncertain",
            "",
            "## Trials the patient selected",
            "(none yet)",
            "",
            "Report: not generated",
        ]
    )
