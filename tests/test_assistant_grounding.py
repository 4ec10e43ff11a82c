"""Grounding checks on answers: unknown NCT ids, uncited trial claims, claims without a lookup."""

from __future__ import annotations

import pytest

from services.assistant.grounding import GroundingWarning, check_answer, cited_ids, makes_trial_claim

SEEN = ["NCT00000001", "NCT00000002"]


def codes(text: str, phase: str = "matching", tool_calls: int = 1) -> list[str]:
    return [w.code for w in check_answer(text, SEEN, phase=phase, tool_calls=tool_calls)]


def test_grounding_cited_ids_in_order_without_repeats() -> None:
    assert cited_ids("See NCT00000002, then nct00000001 and NCT00000002 again; NCT123 is too short.") == [
        "NCT00000002",
        "NCT00000001",
    ]


def test_grounding_flags_only_unseen_ids() -> None:
    warnings = check_answer(
        "NCT00000001 fits; NCT55555555 and NCT66666666 may too.", SEEN, phase="matching", tool_calls=2
    )
    assert warnings == [
        GroundingWarning(
            "unknown_nct",
            "The answer mentions NCT55555555, NCT66666666, which did not come from any search or lookup in this "
            "session. Check it on ClinicalTrials.gov before relying on it.",
        )
    ]


@pytest.mark.parametrize(
    ("text", "phase", "tool_calls", "expected"),
    [
        ("NCT00000001 tests olaparib and is recruiting in Boston.", "matching", 1, []),
        ("This trial is recruiting near you and you may be eligible.", "matching", 3, ["uncited_claim"]),
        ("I found 4 trials that look promising.", "search", 0, ["uncited_claim", "no_lookup"]),
        ("NCT00000001 looks like a good fit for you.", "search", 0, ["no_lookup"]),
        ("NCT00000001 looks like a good fit for you.", "followup", 0, []),
        ("Are you open to phase 1 trials, or only later phases?", "intake", 0, []),
        ("What does 'ECOG' mean? It is a score for how active you are.", "followup", 0, []),
        ("We found 12 recruiting studies within 50 miles.", "followup", 2, ["uncited_claim"]),
        ("The study requires a recent biopsy.", "selection", 0, ["uncited_claim"]),
    ],
)
def test_grounding_claim_rules(text: str, phase: str, tool_calls: int, expected: list[str]) -> None:
    assert codes(text, phase, tool_calls) == expected


def test_grounding_claim_detector_ignores_general_talk() -> None:
    assert not makes_trial_claim("Clinical trials test new treatments; joining one is always your choice.")
    assert makes_trial_claim("You are likely eligible for it.")


def test_grounding_a_longer_token_is_not_the_seen_trial_inside_it() -> None:
    # "NCT000000012" (nine digits) names no trial; the seen NCT00000001 inside it must not make it grounded.
    assert cited_ids("NCT000000012 and xNCT00000002") == ["NCT000000012"]
    assert codes("NCT000000012 fits you.") == ["unknown_nct"]
