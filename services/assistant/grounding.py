"""Checks on each answer before it is shown: cited NCT ids must come from this session's tool results."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# Phases in which talking about trials means a lookup should have happened in the same turn.
LOOKUP_PHASES = frozenset({"search", "matching"})

_CLAIM_PATTERNS = [
    re.compile(p, re.I)
    for p in (
        r"\b(i|we)(\s+have|'ve)?\s+(found|identified|located)\s+(\d+|one|two|three|four|five|several|some|a few)\b",
        r"\b\d+\s+(matching\s+|relevant\s+|open\s+|recruiting\s+|suitable\s+|possible\s+)?(clinical\s+)?(trials|studies)\b",
        r"\b(this|that|the|one|another)\s+(clinical\s+)?(trial|study)\s+(is|was|has|tests|studies|enrolls|recruits|"
        r"requires|excludes|accepts|offers|uses|compares|gives|looks|seems|includes)\b",
        r"\byou\s+(are|'re|may be|might be|would be|could be|seem|appear)\s+(\w+\s+)?(eligible|a good fit|a strong match|a match)\b",
        r"\b(recruiting|enrolling)\s+(at|in|near)\s+[A-Z]",
    )
]


@dataclass(frozen=True)
class GroundingWarning:
    """A problem found in an answer; the page shows message as a warning banner."""

    code: str
    message: str


# An NCT id as a whole token; one with more digits is cited too (and unknown), never read as the id inside it.
_CITED = re.compile(r"(?<![A-Z0-9])NCT\d{8,}(?![A-Z0-9])")


def cited_ids(text: str) -> list[str]:
    """NCT ids in the text, in order of first appearance."""
    return list(dict.fromkeys(_CITED.findall(text.upper())))


def makes_trial_claim(text: str) -> bool:
    """Whether the text states something about specific trials (found, eligible, what a trial does)."""
    return any(p.search(text) for p in _CLAIM_PATTERNS)


def check_answer(
    text: str,
    seen_ids: Iterable[str],
    *,
    phase: str,
    tool_calls: int,
) -> list[GroundingWarning]:
    """Warnings for one answer: unknown NCT ids, trial claims without a citation, claims made without a lookup."""
    warnings: list[GroundingWarning] = []
    seen = set(seen_ids)
    cited = cited_ids(text)
    unknown = [i for i in cited if i not in seen]
    if unknown:
        warnings.append(
            GroundingWarning(
                "unknown_nct",
                f"The answer mentions {', '.join(unknown)}, which did not come from any search or lookup in "
                "this session. Check it on ClinicalTrials.gov before relying on it.",
            )
        )
    claim = makes_trial_claim(text)
    if claim and not cited and phase != "intake":
        warnings.append(
            GroundingWarning(
                "uncited_claim",
                "The answer describes trials without giving their NCT numbers, so it cannot be checked "
                "against the database. Ask which trials it means.",
            )
        )
    if (claim or cited) and tool_calls == 0 and phase in LOOKUP_PHASES:
        warnings.append(
            GroundingWarning(
                "no_lookup",
                "The answer talks about trials, but no search or lookup was made for it. Treat it with care "
                "and ask the assistant to check the database.",
            )
        )
    return warnings
