"""A criterion's biomarker results, extent and course against the patient's own, as read from the form.

"Documented ER+, HER2- tumour" for a patient who said HER2-positive is an inclusion not met; "HER2-positive disease"
as an exclusion applies to her. The words and which values exclude each other are data (data/vocab/qualifiers.csv,
its `polarity` column); this module only compares. It decides only lines it fully understands: one result per
biomarker (or one extent, one course) in the line, no "or" between alternatives, and no negation, condition or
exception words that could turn the line around ("without", "unless", "prior"); anything else stays with the rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from services.eligibility.labels import Label
from services.eligibility.parser import CriterionKind
from services.vocab.qualifiers import Qualifier, qualifiers

# Words that may turn a line around or make it conditional; such a line is left to the rules.
_NOT_PLAIN = re.compile(
    r"\b(no|not|non|without|absence|absent|lack\w*|except|unless|other than|prior|previous\w*|history|if|"
    r"unknown|equivocal|regardless|irrespective|either)\b", re.I)
_OR = re.compile(r"\bor\b", re.I)
NEAR = 25  # characters before the first result word in which a turning word still counts
_WORDS = {"+": "positive", "-": "negative", "advanced": "advanced or metastatic", "early": "early or localised",
          "relapsed": "relapsed or refractory", "new": "newly diagnosed"}


@dataclass(frozen=True)
class QualifierCheck:
    """A decided line: its label and the reason in words."""

    label: Label
    reason: str


def polarities(items: Iterable[Qualifier]) -> dict[str, set[str]]:
    """Each qualifier name's polarities ("HER2" → {"+"}); names without a polarity left out."""
    out: dict[str, set[str]] = {}
    for q in items:
        if q.polarity:
            out.setdefault(q.name, set()).add(q.polarity)
    return out


def patient_polarities(texts: Iterable[str]) -> dict[str, str]:
    """The patient's qualifiers from the form's words (diagnosis, stage, subtype, biomarkers): one polarity per
    name, names the patient gave two opposite ways left out."""
    found = polarities(q for t in texts if t for q in qualifiers(t))
    return {name: next(iter(p)) for name, p in found.items() if len(p) == 1}


def _label(name: str, polarity: str) -> str:
    return f"{name}-{_WORDS[polarity]}" if polarity in ("+", "-") else _WORDS[polarity]


def check(text: str, kind: CriterionKind, patient: dict[str, str]) -> QualifierCheck | None:
    """The line decided from the patient's qualifiers, or None when it names none of them plainly."""
    if not patient:
        return None
    read = qualifiers(text)
    starts = [text.find(q.text) for q in read if q.name in patient and q.polarity and q.text in text]
    # words that could turn it around, from a little before the first result word on ("histologically or
    # cytologically documented HER2-negative" is plain)
    if not starts or _NOT_PLAIN.search(text, max(0, min(starts) - NEAR)):
        return None
    line = polarities(read)
    shared = [n for n in line if n in patient]
    if not shared or any(len(line[n]) != 1 for n in shared):
        return None
    # "EGFR or ALK alterations": one of them is enough to meet the line, none settles it alone
    alternatives = bool(_OR.search(text, max(0, min(starts) - NEAR)))
    matches = [n for n in shared if patient[n] in line[n]]
    clash = [n for n in shared if patient[n] not in line[n]]
    asked = ", ".join(_label(n, next(iter(line[n]))) for n in shared)
    if kind == "inclusion":
        if matches and (alternatives or not clash):
            return QualifierCheck(Label.MET, f"The trial asks for {asked}, and you said "
                                  f"{', '.join(_label(n, patient[n]) for n in matches)}.")
        if clash and not alternatives:
            said = ", ".join(_label(n, patient[n]) for n in clash)
            return QualifierCheck(Label.NOT_MET, f"The trial asks for {asked}; you said {said}.")
        return None
    if matches:
        said = ", ".join(_label(n, patient[n]) for n in matches)
        return QualifierCheck(Label.MET, f"This exclusion is about {asked}, and you said {said}.")
    if clash and not alternatives:
        said = ", ".join(_label(n, patient[n]) for n in clash)
        return QualifierCheck(Label.NOT_MET, f"This exclusion is about {asked}; you said {said}.")
    return None
