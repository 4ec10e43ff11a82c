"""Assemble the system prompt per model call: base + phase prompt (+ skills) + a session-context block."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from services.assistant.session import CONVERSATION_PHASES, AssistantSession

PROMPT_DIR = Path(__file__).parent / "prompts"
PHASE_PROMPTS: dict[str, tuple[str, ...]] = {
    "intake": ("intake",),
    "search": ("search",),
    "matching": ("matching", "skill_eligibility_analysis", "skill_plain_language"),
    "selection": ("selection",),
    "report": ("report", "skill_plain_language"),
    "followup": ("followup", "skill_eligibility_analysis", "skill_plain_language"),
}
CONTEXT_HEADING = "# Session context"
_MAX_LISTED_CANDIDATES = 40


def load_prompt(name: str) -> str:
    """Read one prompt file fresh from disk (edits apply on the next call without a restart)."""
    return (PROMPT_DIR / f"{name}.md").read_text(encoding="utf-8").strip()


def phase_prompt(phase: str) -> str:
    """The phase's prompt followed by its skill prompts."""
    if phase not in CONVERSATION_PHASES:
        raise ValueError(f"unknown phase {phase!r}")
    return "\n\n".join(load_prompt(name) for name in PHASE_PROMPTS[phase])


def build_system(session: AssistantSession) -> list[dict[str, Any]]:
    """System prompt blocks for the next call; the stable base block carries the cache breakpoint."""
    return [
        {"type": "text", "text": load_prompt("base"), "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": phase_prompt(session.phase)},
        {"type": "text", "text": render_context(session)},
    ]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True)


def render_context(session: AssistantSession) -> str:
    """The session-context block: phase, flags, profile, intake answers, filters and trials so far."""
    done = ", ".join(f"{name}={'yes' if value else 'no'}" for name, value in session.flags.items())
    lines = [
        CONTEXT_HEADING,
        f"Current phase: {session.phase}",
        f"Completed: {done}",
        "",
        "## Patient profile (saved)",
        _json(session.patient_profile) if session.patient_profile else "(nothing saved yet)",
    ]
    extra_answers = {
        k: v for k, v in session.intake_answers.items() if session.patient_profile.get(k, object()) != v
    }
    lines += ["", "## Intake answers not already in the profile"]
    lines.append(_json(extra_answers) if extra_answers else "(none)")
    if session.filters:
        lines += ["", "## Dashboard filters now applied", _json(session.filters)]
    open_widgets = [w for w in session.widgets.values() if "answer" not in w]
    if open_widgets:
        lines += ["", "## Choices shown and not yet answered"]
        lines += [f"- {w['widget_id']} ({w['field']}): {w['question']}" for w in open_widgets]
    if session.candidates:
        lines += ["", f"## Candidate trials found: {len(session.candidates)}"]
        for nct_id, trial in list(session.candidates.items())[:_MAX_LISTED_CANDIDATES]:
            lines.append(f"- {nct_id}: {trial.get('title')} [{', '.join(trial.get('strategies', []))}]")
        if len(session.candidates) > _MAX_LISTED_CANDIDATES:
            lines.append(f"- … and {len(session.candidates) - _MAX_LISTED_CANDIDATES} more")
    if session.matched_trials:
        lines += ["", f"## Scored trials: {len(session.matched_trials)} (highest fit first)"]
        lines += [f"- {m['nct_id']}: fit {m['fit_score']}, {m['verdict']}" for m in session.matched_trials]
    lines += ["", "## Trials the patient selected"]
    lines.append(", ".join(session.selected_nct_ids) if session.selected_nct_ids else "(none yet)")
    lines += ["", f"Report: {'generated' if session.report_html else 'not generated'}"]
    return "\n".join(lines)
