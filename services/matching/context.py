"""ConText-style assertion of a mention in running text: affirmed, negated, about a relative, or hypothetical.

The cue phrases are data (data/vocab/context_rules.csv, medspaCy's ConText rules as the model: each row a
literal, a category, a direction and a scope in words, its source and one example that tests it); this module
is the engine. A forward cue covers the words after it, a backward cue the words before it, up to its scope,
within one sentence and never across a terminating cue ("but", "however"); a pseudo cue ("no increase") only
stops a shorter cue from firing where it stands.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from services.errors import BadInput

RULES_PATH = Path(__file__).resolve().parents[2] / "data" / "vocab" / "context_rules.csv"
Assertion = Literal["affirmed", "negated", "family", "hypothetical"]
CATEGORIES: dict[str, Assertion | None] = {
    "NEGATED": "negated",
    "FAMILY": "family",
    "HYPOTHETICAL": "hypothetical",
    "TERMINATE": None,
    "PSEUDO": None,
}
DIRECTIONS = frozenset(("forward", "backward", "terminate", "pseudo"))
_PRECEDENCE: tuple[Assertion, ...] = ("negated", "family", "hypothetical")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SENTENCE_END = re.compile(r"[.;!?](?=\s|$)|\n")


@dataclass(frozen=True)
class ContextRule:
    """One cue phrase: its words, what it asserts, which way it looks and how many words it reaches."""

    literal: str
    category: str
    direction: str
    max_scope: int
    source: str

    @property
    def words(self) -> tuple[str, ...]:
        """The cue's words, lower case."""
        return tuple(w.lower() for w in _WORD.findall(self.literal))


def _rule(row: dict[str, str], line: int) -> ContextRule:
    category, direction = row.get("category", "").strip(), row.get("direction", "").strip()
    if category not in CATEGORIES or direction not in DIRECTIONS:
        raise BadInput(
            f"context rule on line {line}: unknown category {category!r} or direction {direction!r}"
        )
    if (direction in ("terminate", "pseudo")) != (category in ("TERMINATE", "PSEUDO")):
        raise BadInput(
            f"context rule on line {line}: direction {direction!r} does not fit category {category!r}"
        )
    try:
        scope = int(row.get("max_scope", ""))
    except ValueError as exc:
        raise BadInput(f"context rule on line {line}: max_scope must be a whole number") from exc
    rule = ContextRule(
        row.get("literal", "").strip(), category, direction, scope, row.get("source", "").strip()
    )
    if not rule.words or not rule.source or scope < 0:
        raise BadInput(f"context rule on line {line}: a literal, a source and a scope ≥ 0 are required")
    return rule


def load_rules(path: Path = RULES_PATH) -> tuple[ContextRule, ...]:
    """The cue table, validated row by row (BadInput names the line)."""
    with open(path, encoding="utf-8", newline="") as fh:
        return tuple(_rule(row, n) for n, row in enumerate(csv.DictReader(fh), start=2))


@dataclass(frozen=True)
class _Cue:
    rule: ContextRule
    first: int  # token indexes [first, last]
    last: int


class Context:
    """The engine over one rule table."""

    def __init__(self, rules: tuple[ContextRule, ...]) -> None:
        self.rules = sorted(rules, key=lambda r: -len(r.words))  # the longest cue at a word wins

    def _cues(self, words: list[str]) -> list[_Cue]:
        out: list[_Cue] = []
        i = 0
        while i < len(words):
            rule = next((r for r in self.rules if tuple(words[i : i + len(r.words)]) == r.words), None)
            if rule is None:
                i += 1
                continue
            out.append(_Cue(rule, i, i + len(rule.words) - 1))
            i += len(rule.words)
        return out

    def assertion(self, text: str, start: int, end: int) -> Assertion:
        """What the text says about the mention at text[start:end]."""
        left = max((m.end() for m in _SENTENCE_END.finditer(text, 0, start)), default=0)
        stop = _SENTENCE_END.search(text, end)
        right = stop.start() if stop else len(text)
        tokens = [m for m in _WORD.finditer(text, left, right)]
        words = [m.group().lower() for m in tokens]
        inside = [i for i, m in enumerate(tokens) if m.start() >= start and m.end() <= end]
        if not inside:
            return "affirmed"
        first, last = inside[0], inside[-1]
        cues = [c for c in self._cues(words) if c.last < first or c.first > last]
        stops = [c.first for c in cues if c.rule.direction == "terminate"]
        found: set[Assertion] = set()
        for cue in cues:
            asserted = CATEGORIES[cue.rule.category]
            if asserted is None:
                continue
            if cue.rule.direction == "forward" and cue.last < first:
                gap, lo, hi = first - cue.last - 1, cue.last, first
            elif cue.rule.direction == "backward" and cue.first > last:
                gap, lo, hi = cue.first - last - 1, last, cue.first
            else:
                continue
            if gap < cue.rule.max_scope and not any(lo < s < hi for s in stops):
                found.add(asserted)
        return next((a for a in _PRECEDENCE if a in found), "affirmed")


@cache
def context() -> Context:
    """The engine over the shipped cue table, loaded once per process."""
    return Context(load_rules())
