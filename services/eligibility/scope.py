"""Whom a criterion line is for: the heading or label it sits under ("Urothelial Bladder Cancer Expansion
Cohort", "Healthy Volunteer Group", "Dose Escalation") and whether the patient belongs there.

A label is a scope when it holds a cue word of data/eligibility/scope_cues.csv (cohort, arm, group, module,
escalation, healthy, ...). A line under a scope the patient is not in does not apply to them: a
healthy-volunteer list for someone with a condition, a part of the trial for a disease the patient does not
have (MeSH headings of the label against the patient's own, unrelated in the tree), or for a biomarker result
opposite to the patient's (data/vocab/qualifiers.csv polarities). A label that names nothing the patient could
lack (Dose Escalation) leaves the line to the ordinary rules."""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from services.eligibility.patient import PatientFacts, assertion_at

SCOPE_CUES_PATH = Path(__file__).resolve().parents[2] / "data" / "eligibility" / "scope_cues.csv"
MAX_LABEL_WORDS = 25
_MEANINGS = ("part", "healthy", "control", "everyone")


@dataclass(frozen=True)
class Cue:
    """One scope word and what it says about the label."""

    cue: str
    meaning: str


@lru_cache(maxsize=1)
def cues(path: Path = SCOPE_CUES_PATH) -> tuple[Cue, ...]:
    """The cue rows, longest first; a row with an unknown meaning is an error."""
    with path.open(encoding="utf-8", newline="") as handle:
        rows = [Cue(r["cue"].strip().lower(), r["meaning"].strip()) for r in csv.DictReader(handle)]
    bad = [r.cue for r in rows if r.meaning not in _MEANINGS or not r.cue]
    if bad:
        raise ValueError(f"{path}: rows with an unknown meaning or no cue: {bad}")
    return tuple(sorted(rows, key=lambda r: -len(r.cue)))


@lru_cache(maxsize=1)
def _cue_pattern() -> re.Pattern[str]:
    return re.compile(r"\b(" + "|".join(re.escape(c.cue) for c in cues()) + r")\b", re.I)


def label_meaning(label: str) -> str | None:
    """ "part", "healthy", "control" or "everyone" when the label is a scope heading, else None."""
    if not label.strip() or len(label.split()) > MAX_LABEL_WORDS:
        return None
    found = {m.group(1).lower() for m in _cue_pattern().finditer(label)}
    meanings = {c.meaning for c in cues() if c.cue in found}
    for meaning in ("everyone", "healthy", "control", "part"):
        if meaning in meanings:
            return meaning
    return None


_LABEL = re.compile(r"^\W*(?P<label>[^:]{2,200}?)\s*:\s+(?=\S)")


def split_label(text: str) -> tuple[str, str] | None:
    """(label, rest) when the line opens with a scope label ("Breast Cancer (HER2 Low) Expansion Cohort:
    ...")."""
    m = _LABEL.match(text)
    if m is None or label_meaning(m.group("label")) is None:
        return None
    return m.group("label").strip(), text[m.end() :]


def _mesh():  # type: ignore[no-untyped-def]
    from services.vocab.mesh import vocabulary

    return vocabulary()


@lru_cache(maxsize=4096)
def _patient_headings(facts: PatientFacts) -> frozenset[str]:
    """The disease headings the patient's statements affirm."""
    mesh = _mesh()
    out: set[str] = set()
    for sentence in facts.sentences:
        for m in mesh.mentions(sentence.text):
            if assertion_at(sentence.text, m.start, m.end) == "affirmed":
                out.add(m.ui)
    return frozenset(out)


def _qualifier_clash(label: str, facts: PatientFacts) -> str | None:
    from services.eligibility.qualifier_check import patient_polarities, polarities
    from services.vocab.qualifiers import qualifiers

    own = patient_polarities(s.text for s in facts.sentences)
    asked = polarities(qualifiers(label))
    for name, wanted in asked.items():
        if name in own and own[name] not in wanted and len(wanted) == 1:
            return name
    return None


def outside_scope(label: str, facts: PatientFacts) -> str | None:
    """Why the patient is not in the group the label names, or None when they are or may be."""
    meaning = label_meaning(label)
    if meaning is None or meaning == "everyone":
        return None
    short = " ".join(label.split())[:120]
    if meaning == "healthy":
        if facts.healthy_volunteer is False:
            return f'This line is for the healthy volunteers ("{short}"); you are taking part as a patient.'
        return None
    mesh = _mesh()
    if meaning == "control":
        # A comparison group: a patient belongs only when it is for their own disease.
        if any(mesh.related(a, b) for a in mesh.resolve(label) for b in _patient_headings(facts)):
            return None
        return f'This line is for the trial\'s comparison group ("{short}"), not for patients like you.'
    clash = _qualifier_clash(label, facts)
    if clash:
        return f'This line is for one part of the trial ("{short}"), whose {clash} result is not yours.'
    named = mesh.resolve(label)
    own = _patient_headings(facts)
    if named and own and not any(mesh.related(a, b) for a in named for b in own):
        names = ", ".join(sorted(mesh.name(u) for u in named))
        return (f'This line is for one part of the trial ("{short}"), for people with {names.lower()}, '
                "not your condition.")
    return None


def own_disease_named(text: str, facts: PatientFacts) -> tuple[str, str] | None:
    """(the diseases named, the text without them) when every disease the line names (MeSH) is one the patient
    has, or broader than one ("cancer" for a breast-cancer patient); None when it names none or any other."""
    mesh = _mesh()
    named = [m for m in mesh.mentions(text) if not mesh.is_attribute(m.ui)]
    own = _patient_headings(facts)
    if not named or not own:
        return None
    if not all(any(m.ui == o or m.ui in mesh.broader(o) for o in own) for m in named):
        return None
    rest = "".join(" " if any(m.start <= i < m.end for m in named) else ch for i, ch in enumerate(text))
    return ", ".join(dict.fromkeys(mesh.name(m.ui).lower() for m in named)), rest
