"""Lines of therapy: "1 to 3 prior lines of antimyeloma therapy", "at least one prior line", "<= 2 prior
lines" against the number the patient gave ("Relapsed after three lines of therapy").

Only lines counted in general (of therapy, treatment, regimens, anti-myeloma therapy) are compared; a count of
one drug class ("<= 2 prior lines of EGFR TKIs") needs a history the form does not give, so it is left open.
"""

from __future__ import annotations

import re

from services.eligibility.patient import PatientFacts
from services.eligibility.statements import Reading

_NUMBERS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "a": 1,
    "an": 1,
}
_N = r"(\d{1,2}|one|two|three|four|five|six|seven|eight)"
_LINES = r"\s+(?:prior\s+|previous\s+)?lines?\b"
_BOUNDS = (
    (re.compile(_N + r"\s*(?:to|-|–)\s*" + _N + _LINES, re.I), "range"),
    (re.compile(r"\b(?:at least|a minimum of|minimum of|>=|≥)\s*" + _N + _LINES, re.I), "min"),
    (re.compile(_N + r"\s+or more" + _LINES, re.I), "min"),
    (
        re.compile(
            r"(?:\b(?:at most|no more than|up to|less than or equal to|maximum of)|<=|≤)\s*\(?\s*(?:<=|≤)?\s*"
            + _N
            + r"\)?"
            + _LINES,
            re.I,
        ),
        "max",
    ),
)
# What is counted must be therapy in general, not one drug class.
_GENERAL = re.compile(
    r"^\s*(?:of\s+)?(?:(?:anti-?\s?\w+|systemic|standard|approved|established|prior|previous|"
    r"an?|or|and)\s+)*(?:therapy|therapies|treatment|treatments|regimens?)\b|^\s*(?:[.;,)]|$)",
    re.I,
)
_HAD = re.compile(r"\b" + _N + r"\s+(?:prior\s+|previous\s+)?lines?\s+of\s+(?:therapy|treatment)", re.I)


def _number(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word.lower()]


def therapy_lines(text: str, facts: PatientFacts) -> Reading | None:
    """The criterion's bound on prior lines against the patient's count; None when the line sets no such
    bound."""
    for pattern, shape in _BOUNDS:
        m = pattern.search(text)
        tail = _GENERAL.match(text[m.end() :]) if m else None
        if m is None or tail is None:
            continue
        first = _number(m.group(1))
        low, high = (
            (first, _number(m.group(2)))
            if shape == "range"
            else (first, 99)
            if shape == "min"
            else (0, first)
        )
        asked = m.group(0).strip()
        span = (m.start(), m.end() + tail.end())
        for sentence in facts.sentences:
            had = _HAD.search(sentence.text)
            if had:
                count = _number(had.group(1))
                ok = low <= count <= high
                return Reading(
                    ok,
                    f"{facts.source} gives {count} prior lines of therapy, "
                    f"{'within' if ok else 'outside'} what the line asks ({asked}).",
                    facts.evidence([sentence.id]),
                    (span,),
                    False,
                )
        return Reading(
            None,
            f"The line asks for {asked}; {facts.source.lower()} does not count the lines of therapy.",
            (),
            (span,),
            True,
        )
    return None
