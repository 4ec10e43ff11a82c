"""A diagnosis as MeSH headings plus structured qualifiers (biomarker status, stage, extent, course, lines, severity).

"HER2-positive metastatic breast cancer" is Breast Neoplasms with HER2 = positive and extent = metastatic: the
qualifiers are facts for the eligibility judgement, never part of the condition searched for. Cue words are data
(data/vocab/qualifiers.csv, each row with its source); stage and lines of therapy are two patterns below.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from services.vocab.mesh import vocabulary

DATA = Path(__file__).resolve().parents[2] / "data" / "vocab" / "qualifiers.csv"
Kind = Literal["biomarker", "stage", "extent", "course", "lines", "severity"]

_ROMAN = {"0": "0", "i": "1", "ii": "2", "iii": "3", "iv": "4", "1": "1", "2": "2", "3": "3", "4": "4"}
# "stage IIIB", "stage 4", "Stage IV-A": the stage group with its optional letter (AJCC).
_STAGE = re.compile(r"\bstage\s+(0|iv|i{1,3}|[1-4])\s*-?\s*([abc])?\b", re.IGNORECASE)
_ORDINAL = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4,
            "5th": 5}
_NUMBER = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
# "after 3 lines", "3 prior lines of therapy", "two previous regimens": lines already received;
# "third-line", "3L": the line the patient is now at (so one fewer received).
_LINES_RECEIVED = re.compile(r"\b(\d|one|two|three|four|five|six)\s+(?:or more\s+)?(?:prior|previous)?\s*"
                             r"(?:lines?|regimens?)\b", re.IGNORECASE)
_LINE_NOW = re.compile(r"\b(first|second|third|fourth|fifth|1st|2nd|3rd|4th|5th)[-\s]line\b|\b([1-5])L\b",
                       re.IGNORECASE)


# A result noun followed by what it is in: "mutations in", "changes in the", "alterations of".
_RESULT_BEFORE = re.compile(r"\b(mutations?|alterations?|changes|rearrangements?|fusions?|amplifications?)\s+"
                            r"(?:in|of|involving)\s+", re.I)


@dataclass(frozen=True)
class Qualifier:
    """One fact about the disease: kind, name (the biomarker, or the kind again) and its normalised value."""

    kind: Kind
    name: str
    value: str
    text: str  # as written
    polarity: str = ""  # which values exclude each other ("+"/"-", "advanced"/"early", "relapsed"/"new"); "" none


@dataclass(frozen=True)
class Diagnosis:
    """A typed diagnosis: its MeSH headings (descriptor ids) and the qualifiers read from the same words."""

    text: str
    headings: frozenset[str]
    qualifiers: tuple[Qualifier, ...]

    def value(self, name: str) -> str | None:
        """The value of a qualifier by name ("HER2", "extent", "stage", …), or None."""
        return next((q.value for q in self.qualifiers if q.name == name), None)


@dataclass(frozen=True)
class _Cue:
    kind: str
    cue: str
    value: str
    pattern: re.Pattern[str]
    polarity: str = ""


def _pattern(cue: str) -> re.Pattern[str]:
    body = r"\s*".join(re.escape(w) for w in cue.split())
    if cue in ("+", "-"):
        return re.compile(re.escape(cue))
    strict = len(cue) <= 4 and cue[:1].isupper()
    flags = 0 if strict else re.IGNORECASE
    return re.compile(r"(?<![\w])" + body + r"(?![\w])", flags)


@cache
def cues() -> tuple[_Cue, ...]:
    """The rows of qualifiers.csv, compiled; longer cues first so "moderate-to-severe" wins over "severe"."""
    with open(DATA, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    out = [_Cue(r["kind"], r["cue"], r["value"], _pattern(r["cue"]), r["polarity"]) for r in rows]
    return tuple(sorted(out, key=lambda c: -len(c.cue)))


def _biomarkers(text: str) -> list[Qualifier]:
    """Biomarker results: a biomarker (or several joined by "/") followed by a result word, joined by a hyphen,
    a space, "is" or ":" ("HER2-positive", "ER/PR positive", "EGFR exon 19 mutation", "HER2 IHC 3+"), or a result
    word before "for" and the biomarker ("positive for HER2")."""
    markers = [c for c in cues() if c.kind == "biomarker"]
    statuses = [c for c in cues() if c.kind == "status"]
    out: list[Qualifier] = []
    for mk in markers:
        for m in mk.pattern.finditer(text):
            names = [mk.value]
            end = m.end()
            while (more := re.match(r"\s*/\s*", text[end:])) is not None:
                nxt = next((c for c in markers if c.pattern.match(text, end + more.end())), None)
                if nxt is None:
                    break
                names.append(nxt.value)
                end = nxt.pattern.match(text, end + more.end()).end()  # type: ignore[union-attr]
            tail = text[end:end + 40]
            sign = re.match(r"[+-](?!\w)", tail)  # "HER2+", "ER-": the sign attached to the biomarker
            gap = re.match(r"(?:\s*[-:]\s*|\s+(?:is\s+)?)(?:exon\s+\d+\s+)?", tail)
            at = 0 if sign else gap.end() if gap else -1
            st = next((s for s in statuses if at >= 0 and s.pattern.match(tail, at)), None)
            if st is None:
                continue
            stop = end + st.pattern.match(tail, at).end()  # type: ignore[union-attr]
            out += [Qualifier("biomarker", n, st.value, text[m.start():stop], st.polarity) for n in names]
    for result in statuses:
        for m in re.finditer(result.pattern.pattern + r"\s+for\s+", text, result.pattern.flags):
            found = next((c for c in markers if c.pattern.match(text, m.end())), None)
            if found is not None:
                out.append(Qualifier("biomarker", found.value, result.value,
                                     text[m.start():m.end() + len(found.cue)], result.polarity))
    # "mutations in EGFR", "known changes in the EGFR or ALK genes", "alterations in genes such as EGFR, ALK":
    # a result noun before the biomarkers it is about
    for m in _RESULT_BEFORE.finditer(text):
        word = m.group(1).lower()
        noun = next((r for r in statuses if r.cue.lower() == word or r.cue.lower() + "s" == word), None)
        if noun is None:
            continue
        span = text[m.end():m.end() + 90]
        for mk in markers:
            for hit in mk.pattern.finditer(span):
                out.append(Qualifier("biomarker", mk.value, noun.value, text[m.start():m.end() + hit.end()],
                                     noun.polarity))
    for c in cues():
        if c.kind == "combined":
            for m in c.pattern.finditer(text):
                for part in c.value.split(";"):
                    name, value = part.split(":")
                    polarity = next((s.polarity for s in statuses if s.value == value), "")
                    out.append(Qualifier("biomarker", name, value, m.group(), polarity))
    return out


def qualifiers(text: str) -> tuple[Qualifier, ...]:
    """Every qualifier a diagnosis text carries, once per (name, value), in the order of the data table."""
    found: list[Qualifier] = _biomarkers(text)
    taken: list[tuple[int, int]] = []
    for c in cues():
        if c.kind in ("extent", "course", "severity"):
            for m in c.pattern.finditer(text):
                if any(a <= m.start() < b for a, b in taken):
                    continue  # inside a longer cue already read ("locally advanced" is not also "advanced")
                taken.append((m.start(), m.end()))
                found.append(Qualifier(c.kind, c.kind, c.value, m.group(), c.polarity))  # type: ignore[arg-type]
    if (s := _STAGE.search(text)) is not None:
        found.append(Qualifier("stage", "stage", _ROMAN[s.group(1).lower()] + (s.group(2) or "").upper(), s.group()))
    if (n := _LINES_RECEIVED.search(text)) is not None:
        word = n.group(1).lower()
        found.append(Qualifier("lines", "lines", str(_NUMBER.get(word) or int(word)), n.group()))
    elif (n := _LINE_NOW.search(text)) is not None:
        at = _ORDINAL[n.group(1).lower()] if n.group(1) else int(n.group(2))
        found.append(Qualifier("lines", "lines", str(at - 1), n.group()))
    seen: set[tuple[str, str]] = set()
    out = []
    for q in found:
        if (q.name, q.value) not in seen:
            seen.add((q.name, q.value))
            out.append(q)
    return tuple(out)


def diagnosis(text: str) -> Diagnosis:
    """A diagnosis text as MeSH headings plus qualifiers."""
    return Diagnosis(text, vocabulary().resolve(text), qualifiers(text))
