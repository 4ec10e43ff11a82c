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
from services.eligibility.scope import split_label
from services.vocab.qualifiers import Qualifier, qualifiers

# Words that may turn a line around or make it conditional; such a line is left to the rules.
NOT_PLAIN = re.compile(
    r"\b(no|not|non|without|absence|absent|lack\w*|except|unless|other than|prior|previous\w*|history|if|"
    r"unknown|equivocal|regardless|irrespective|either)\b", re.I)
_OR = re.compile(r"\bor\b", re.I)
LEAD_WORDS = 4  # words before the first result beyond which a verdict against the patient is not drawn
NEAR = 25  # characters before the first result word in which a turning word still counts
OR_GAP = 4  # words between two result words an "or" may join ("EGFR or ALK", "HER2-positive or HER2-low")
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


_SENTENCE_END = re.compile(r"(?<=[.;])\s+(?=[A-Z])")


def _first_sentence_with_a_result(text: str, patient: dict[str, str]) -> str:
    """The first sentence of a line that names one of the patient's qualifiers (the whole line when none
    does): a later sentence ("To fulfil the requirement of HR+ disease, … with or without PgR") neither
    turns nor widens it."""
    for sentence in _SENTENCE_END.split(text):
        if any(q.name in patient and q.polarity and q.text in sentence for q in qualifiers(sentence)):
            return sentence
    return text


def _joined_by_or(text: str, mentions: list[tuple[int, int]]) -> bool:
    """Whether an "or" stands between two neighbouring result words, at most OR_GAP words from each."""
    for (start, size), (after, _) in zip(mentions, mentions[1:], strict=False):
        between = text[start + size:after]
        if _OR.search(between) and len(between.split()) <= OR_GAP:
            return True
    return False


def check(text: str, kind: CriterionKind, patient: dict[str, str]) -> QualifierCheck | None:
    """The line decided from the patient's qualifiers, or None when it names none of them plainly."""
    if not patient:
        return None
    label, text = split_label(text) or ("", text)  # a cohort label says whom the line is for (scope.py)
    if any(patient.get(n, p) not in p for n, p in polarities(qualifiers(label)).items()):
        return None  # a part of the trial for another result: the rules say it does not apply
    text = _first_sentence_with_a_result(text, patient)  # "not", "without", "or" bind within their sentence
    read = qualifiers(text)
    starts = [text.find(q.text) for q in read if q.name in patient and q.polarity and q.text in text]
    # words that could turn it around, from a little before the first result word on ("histologically or
    # cytologically documented HER2-negative" is plain)
    if not starts or NOT_PLAIN.search(text, max(0, min(starts) - NEAR)):
        return None
    line = polarities(read)
    shared = [n for n in line if n in patient]
    if not shared or any(len(line[n]) != 1 for n in shared):
        return None
    # "EGFR or ALK alterations": one of them is enough to meet the line, none settles it alone. Only an "or"
    # that joins two result words counts ("(primary or metastatic) sample" later in the line joins none).
    alternatives = _joined_by_or(text, sorted(
        (text.find(q.text), len(q.text)) for q in read if q.polarity and q.text in text))
    # A result deep in a line describes something else it is about ("dyspnoea due to advanced malignancy",
    # "therapy in the metastatic setting"): such a line is never held against the patient here.
    # counted from the first result word, the patient's or not; a biomarker result names the disease itself
    # ("… invasive TNBC or HR-low/HER2-negative breast cancer") and is never deep
    first = min(text.find(q.text) for q in read if q.polarity and q.text in text)
    biomarkers = {q.name for q in read if q.kind == "biomarker"}
    deep = len(text[:first].split()) > LEAD_WORDS and not any(n in biomarkers for n in shared)
    matches = [n for n in shared if patient[n] in line[n]]
    clash = [n for n in shared if patient[n] not in line[n]]
    asked = ", ".join(_label(n, next(iter(line[n]))) for n in shared)
    if kind == "inclusion":
        if matches and (alternatives or not clash):
            return QualifierCheck(Label.MET, f"The trial asks for {asked}, and you said "
                                  f"{', '.join(_label(n, patient[n]) for n in matches)}.")
        if clash and not alternatives and not deep:
            said = ", ".join(_label(n, patient[n]) for n in clash)
            return QualifierCheck(Label.NOT_MET, f"The trial asks for {asked}; you said {said}.")
        return None
    if matches and not deep:
        said = ", ".join(_label(n, patient[n]) for n in matches)
        return QualifierCheck(Label.MET, f"This exclusion is about {asked}, and you said {said}.")
    if clash and not alternatives:
        said = ", ".join(_label(n, patient[n]) for n in clash)
        return QualifierCheck(Label.NOT_MET, f"This exclusion is about {asked}; you said {said}.")
    return None
