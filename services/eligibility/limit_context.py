"""What the words around a lab or measure limit make of it (data/eligibility/limit_context.csv).

"Potassium <= 4.8 mmol/L if eGFR >= 45": the eGFR limit is a *condition* saying when the potassium limit
applies, not a requirement of its own. "Total hemoglobin increase less than 1 g/dL": the limit is on a
*change*, not on the patient's level, so the level from the form cannot settle it. A new cue is a row of the
file."""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

LIMIT_CONTEXT_PATH = Path(__file__).resolve().parents[2] / "data" / "eligibility" / "limit_context.csv"
# "other": the name is part of another measure ("birth weight" is not the weight now).
# "reference": the number is measured from a reference value ("more than 45 kg over ideal body weight");
# "normal": the limit is inside a bracket giving the normal range ("vital signs (reference value range:
# ...)"); "negated": inside a bracket defining what the line's opening denies ("No uncontrolled hypertension
# (diastolic > 110 mm Hg)": the patient must not be above it; the verdict is the limit's opposite).
_ROLES = {("condition", "before"), ("change", "between"), ("change", "before"), ("other", "before"),
          ("reference", "after"), ("normal", "bracket"), ("normal", "between"), ("normal", "line"),
          ("negated", "opening")}
# Roles whose limit is neither the patient's level nor settled by the line's other words: it stays unread.
UNREAD_ROLES = frozenset({"reference", "normal"})


@dataclass(frozen=True)
class ContextCue:
    """One cue: its words, what it makes of the limit, and where it stands (before the name / between name and
    number)."""

    cue: str
    role: str
    where: str


@lru_cache(maxsize=1)
def context_cues(path: Path = LIMIT_CONTEXT_PATH) -> tuple[ContextCue, ...]:
    """The rows of the file; a row with an unknown role or place is an error."""
    with path.open(encoding="utf-8", newline="") as handle:
        rows = tuple(
            ContextCue(r["cue"].strip().lower(), r["role"].strip(), r["where"].strip())
            for r in csv.DictReader(handle)
        )
    bad = [r.cue for r in rows if (r.role, r.where) not in _ROLES or not r.cue]
    if bad:
        raise ValueError(f"{path}: rows with an unknown role or place: {bad}")
    return rows


@lru_cache(maxsize=8)
def _pattern(where: str) -> re.Pattern[str]:
    words = sorted((c.cue for c in context_cues() if c.where == where), key=len, reverse=True)
    body = "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in words)
    if where == "before":  # the cue, then at most a few words ("if the screening eGFR"), then the name
        return re.compile(r"\b(?P<cue>" + body + r")\s+(?:[\w-]+\s+){0,3}$", re.I)
    if where == "opening":  # the clause opens with the cue: "No ...", "Without ..."
        return re.compile(r"\W*(?:" + body + r")\b", re.I)
    if where == "after":  # right after the limit: "over (the) ideal body weight", "above baseline"
        return re.compile(r"\s*(?:\([^()]{0,40}\)\s*)?\.?\s*(?:over|above|below|under|more than|less than|"
                          r"from)\s+(?:(?:the|their|his|her|an?)\s+)?(?:" + body + r")\b", re.I)
    return re.compile(r"\b(?P<cue>" + body + r")\b", re.I)


def limit_role(text: str, name_start: int, number_start: int, end: int | None = None) -> str | None:
    """"condition", "change", "other", "reference" or "normal" for the limit whose measure name starts at
    name_start and whose number starts at number_start (with `end`, where the limit ends, what follows it
    counts too); None for an ordinary requirement."""
    if end is not None and _pattern("after").match(text, end):
        return "reference"
    if _pattern("line").search(text, 0, name_start):  # "BP outside the limits considered safe: SBP 90 - 140"
        return "normal"
    opening = text.rfind("(", 0, name_start)
    in_bracket = opening >= 0 and ")" not in text[opening:name_start]
    if in_bracket and _pattern("bracket").search(text, opening, name_start):
        return "normal"
    if in_bracket and _pattern("opening").match(re.split(r"[;.:]\s", text[:opening])[-1]):
        return "negated"
    clause = re.split(r"[;.:]\s|,", text[:name_start])[-1]
    before = _pattern("before").search(clause)
    if before:
        return _role_of("before", before)
    between = _pattern("between").search(text[name_start:number_start]) if number_start > name_start else None
    return _role_of("between", between) if between else None


def _role_of(where: str, found: re.Match[str]) -> str:
    """The role of the row whose cue the pattern found."""
    cue = " ".join(found.group("cue").lower().split())
    return next(c.role for c in context_cues() if c.where == where and " ".join(c.cue.split()) == cue)
