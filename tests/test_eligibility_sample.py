"""General rules checked over every matching line of the shipped sample (issue 37): consent lines never count
against the patient, and no reason states an impossible range."""

from __future__ import annotations

import re

import pytest

from services.eligibility.labels import Label
from services.eligibility.patient import PatientProfile
from services.eligibility.rules import evaluate
from tests.eligibility_sample import sample_lines

_CONSENT_WORDS = (
    r"\b(?:consent\w*|assent|willing\w*|unwilling\w*|able to comply|comply with|capacity to|"
    r"ability to understand)\b"
)
# Lines that are about something else as well as consent: a verdict on that something may count against the patient.
_OTHER_SUBJECT = re.compile(
    r"\b(?:pregnan\w*|contracept\w*|breast[- ]?feed\w*|lactat\w*|sperm|condoms?|abstinen\w*|"
    r"age[ds]?|years?|allerg\w*|hypersensitiv\w*|transfusion\w*|vaccin\w*|biops\w*|"
    r"child\w*|infants?|minors?|p(?:a)?ediatric|adolescen\w*|youth|preterm|neonat\w*|"
    r"wom[ae]n|girls?|boys?|m[ae]n|(?:fe)?males?(?!\s+partners?))\b",
    re.I,
)
# (A line for children, or for one sex, may rightly be judged on who it is for: "Incarcerated men able to consent".
# "his female partner" is about the partner, so such lines stay in.)


@pytest.mark.parametrize(
    "patient",
    [PatientProfile(age=62, sex="male"), PatientProfile(age=35, sex="female")],
    ids=["man-62", "woman-35"],
)
def test_sample_consent_lines_never_count_against_the_patient(patient: PatientProfile) -> None:
    against = []
    checked = 0
    for nct, kind, line in sample_lines(_CONSENT_WORDS):
        if _OTHER_SUBJECT.search(line):
            continue
        checked += 1
        judgement = evaluate(line, kind, patient)
        if judgement.label == (Label.MET if kind == "exclusion" else Label.NOT_MET):
            against.append((nct, kind, line[:120], judgement.reason[:120]))
    assert checked > 1000
    assert not against, (len(against), against[:8])


_UNIT_YEARS = {"year": 1.0, "month": 1 / 12, "week": 7 / 365.25, "day": 1 / 365.25}
# Independent of the engine: "16 years to 2 years", "from 3 months to 1 year" in a reason.
_RANGE_IN_REASON = re.compile(
    r"(\d+(?:\.\d+)?)\s*(year|month|week|day)s?\s+(?:old\s+)?(?:to|and)\s+(\d+(?:\.\d+)?)\s*"
    r"(year|month|week|day)s?",
    re.I,
)
_KARNOFSKY = re.compile(r"\b(?:Karnofsky|KPS|Lansky)\b[^0-9.;]{0,25}(\d{1,3})", re.I)
_AGE_OR_SCORE = r"\b(?:age[ds]?|years? old|year-old|years? of age|Karnofsky|KPS|Lansky)\b"


@pytest.mark.parametrize(
    "patient",
    [PatientProfile(age=9, sex="male"), PatientProfile(age=62, sex="female")],
    ids=["boy-9", "woman-62"],
)
def test_sample_reasons_state_no_impossible_range(patient: PatientProfile) -> None:
    nonsense = []
    checked = 0
    for nct, kind, line in sample_lines(_AGE_OR_SCORE):
        if not re.search(r"\d", line):
            continue
        checked += 1
        reason = evaluate(line, kind, patient).reason
        for m in _RANGE_IN_REASON.finditer(reason):
            low = float(m.group(1)) * _UNIT_YEARS[m.group(2).lower()]
            high = float(m.group(3)) * _UNIT_YEARS[m.group(4).lower()]
            if low >= high:
                nonsense.append((nct, line[:100], m.group(0)))
        written = {int(n) for n in _KARNOFSKY.findall(line)}
        for n in _KARNOFSKY.findall(reason):
            if int(n) < 20 and int(n) not in written:
                nonsense.append((nct, line[:100], f"Karnofsky {n}"))
    assert checked > 1000
    assert not nonsense, (len(nonsense), nonsense[:8])
