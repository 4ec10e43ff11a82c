"""What the rule evaluator knows about a patient: a structured profile or a free-text clinical note."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from services.eligibility.vocabulary import find_concepts
from services.errors import BadInput

Sex = Literal["female", "male"]  # one spelling wherever the patient is described (the assistant's tools too)
Assertion = Literal["affirmed", "negated", "family", "absent"]


@dataclass(frozen=True)
class LabValue:
    """One uploaded lab result: the value in the measure's standard unit, its date (YYYY-MM-DD) and where it came from."""

    key: str  # a services.healthdata measure key: "creatinine", "egfr", "alt", …
    value: float
    unit: str
    date: str
    source: str = ""
    name: str = ""  # as written in the upload


@dataclass(frozen=True)
class PatientProfile:
    """Facts a patient (or the assistant's intake) gave us; unknown fields stay None or empty."""

    age: float | None = None
    sex: Sex | None = None
    conditions: tuple[str, ...] = ()
    biomarkers: tuple[str, ...] = ()
    treatments: tuple[str, ...] = ()
    ecog: int | None = None
    pregnant: bool | None = None
    healthy_volunteer: bool | None = None
    notes: str | None = None
    labs: tuple[LabValue, ...] = ()

    @classmethod
    def from_answers(cls, answers: Mapping[str, Any], labs: tuple[LabValue, ...] = ()) -> PatientProfile:
        """The profile the assistant saved (services.assistant.arguments.ProfileUpdate's fields) as the rules
        read it: the diagnosis, its stage and subtype and the other conditions are all conditions."""
        conditions = [answers.get(k) or "" for k in ("diagnosis", "stage", "subtype")]
        conditions += list(answers.get("other_conditions") or [])
        return cls(
            age=float(answers["age"]) if answers.get("age") is not None else None,
            sex=answers.get("sex"),
            conditions=tuple(c for c in conditions if c),
            biomarkers=tuple(answers.get("biomarkers") or ()),
            treatments=tuple(answers.get("treatments") or ()),
            ecog=answers.get("ecog"),
            notes=answers.get("notes") or None,
            labs=labs,
        )

    def __post_init__(self) -> None:
        if self.sex not in (None, "male", "female"):
            raise BadInput(f"sex must be 'male', 'female' or unknown, not {self.sex!r}")
        if self.age is not None and not 0 <= self.age < 130:
            raise BadInput(f"age {self.age} years is outside 0-130")
        if self.ecog is not None and self.ecog not in range(0, 6):
            raise BadInput(f"ECOG performance status must be 0-5, not {self.ecog}")


@dataclass(frozen=True)
class Sentence:
    """One numbered statement about the patient."""

    id: int
    text: str


@dataclass(frozen=True)
class PatientFacts:
    """The patient as the rules see it: numbered statements plus the facts read out of them.

    ``complete_record`` is True for a clinical note written as a full case summary (the
    TrialGPT/TREC notes): a condition such a note does not mention is taken to be absent, the way a
    clinician reads a referral letter.  A profile collected in a chat is not complete in that sense.
    """

    sentences: tuple[Sentence, ...]
    age: float | None
    sex: Sex | None
    pregnant: bool | None
    gestation_weeks: float | None
    healthy_volunteer: bool | None
    ecog: int | None
    consent: bool
    complete_record: bool
    from_note: bool
    age_evidence: tuple[int, ...] = ()
    sex_evidence: tuple[int, ...] = ()
    pregnancy_evidence: tuple[int, ...] = ()
    ecog_evidence: tuple[int, ...] = ()
    consent_evidence: tuple[int, ...] = ()
    # Whether the note says the patient will follow the study plan (comply, attend visits); a note that only
    # says they will consent does not say this.  Profiles leave it to the screening visit, like consent.
    comply: bool = False
    labs: tuple[LabValue, ...] = ()  # uploaded lab results (a profile's; a note has none)

    @property
    def source(self) -> str:
        """Whose words a reason quotes: "The note", or "Your profile" for answers and uploaded records."""
        return "The note" if self.from_note else "Your profile"

    def evidence(self, ids: tuple[int, ...] | list[int]) -> tuple[int, ...]:
        """Sentence ids worth citing: note sentences only, sorted, without repeats."""
        if not self.from_note:
            return ()
        return tuple(sorted(set(ids)))


_NUMBERED = re.compile(r"^\s*(\d{1,3})\.\s+(.*)$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")


def split_note(note: str) -> tuple[Sentence, ...]:
    """Numbered note lines ("0. ...\\n1. ...") as sentences; unnumbered text is split and numbered from 0."""
    lines = [line for line in note.replace("\r\n", "\n").split("\n") if line.strip()]
    numbered = [_NUMBERED.match(line) for line in lines]
    if lines and all(numbered):
        return tuple(Sentence(int(m.group(1)), m.group(2).strip()) for m in numbered if m)
    text = " ".join(line.strip() for line in lines)
    parts = [p.strip() for p in _SENTENCE_END.split(text) if p.strip()]
    return tuple(Sentence(i, p) for i, p in enumerate(parts))


# --- Reading facts out of a note ---------------------------------------------------------------

_UNIT_YEARS = {"year": 1.0, "yr": 1.0, "y": 1.0, "month": 1 / 12, "mo": 1 / 12, "week": 1 / 52.18, "wk": 1 / 52.18,
               "day": 1 / 365.25}
_AGE_PATTERNS = (
    re.compile(r"\b(\d{1,3}(?:\.\d)?)[- ]?(year|yr|month|mo|week|wk|day)s?[- ]?old\b", re.I),
    re.compile(r"\b(\d{1,3})\s*(?:yo|y/o|y\.o\.|yrs? old)\b", re.I),
    re.compile(r"\b(?:aged?|age of)\s+(\d{1,3})\b(?!\s*(?:months|weeks|days))", re.I),
    re.compile(r"\b(\d{1,3})[- ]?(?:year|yr)s?[- ]of[- ]age\b", re.I),
)
_NEWBORN = re.compile(r"\b(newborn|neonate|new-born)\b", re.I)
_FEMALE_NOUN = re.compile(r"\b(woman|women|female|girl|lady|mother of|gravida|she)\b", re.I)
_MALE_NOUN = re.compile(r"\b(man|men|male|boy|gentleman|he)\b", re.I)
_FEMALE_PRONOUN = re.compile(r"\b(she|her|hers|herself)\b", re.I)
_MALE_PRONOUN = re.compile(r"\b(he|his|him|himself)\b", re.I)
_PREGNANT = re.compile(r"\b(pregnan\w*|gestation\w*|gravid\w*|trimester|antenatal|prenatal)\b", re.I)
# A pregnancy word that qualifies something else: "no prenatal care" does not say the patient is not pregnant.
_PREGNANCY_DETAIL = re.compile(r"^\W*(?:care|visits?|vitamins?|diabetes|hypertension|complications?|loss(?:es)?|"
                               r"history|induced|related|associated)\b", re.I)
_GESTATION = re.compile(
    r"\b(\d{1,2}(?:\.\d)?)\s*weeks?(?:'|’)?\s*(?:of\s+)?(?:gestation|pregnan\w*|gestational age)"
    r"|gestational age (?:of |is |was )?(\d{1,2}(?:\.\d)?)\s*weeks",
    re.I,
)
# Performance status in every spelling: "ECOG 1", "Eastern Cooperative Oncology Group (ECOG) performance status
# of one", "WHO PS 0", "Zubrod 2", "performance status 1", "Karnofsky 80%", "KPS of 90", "Lansky 70".
_NUMBER_WORDS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
# A "WHO grade" is a tumour's grade, not performance status.
_PS_SCALE = r"(?:ECOG|Eastern Cooperative Oncology Group|Zubrod|(?:(?-i:WHO)|World Health Organi[sz]ation)(?![- ]grade\b))"
_ECOG = re.compile(
    r"(?:\b" + _PS_SCALE + r"(?:\s*\((?:ECOG|WHO)\))?(?:[- ](?:performance|PS|score|grade|status|scale|of|is|was|"
    r"\(PS\)|:|=)){0,5}|\bperformance status(?:\s*\((?:ECOG|WHO|PS)\))?(?: score| grade)?|\bPS)"
    r"\s*(?:of|is|was|=|:|at|score|grade)?\s*(?:of\s*)?([0-5]|zero|one|two|three|four|five)\b(?!\s*(?:%|mg|years?|months?|weeks?|days?))",
    re.I,
)
_KARNOFSKY = re.compile(r"\b(?:Karnofsky|Karnovsky|KPS|Lansky)[^0-9.;]{0,25}(\d{2,3})\s*%?", re.I)
# The ECOG scale's own descriptions, as notes sometimes give them instead of a number.
_PS_WORDS = (
    (re.compile(r"\bfully active\b|\basymptomatic and fully active\b|\bable to carry on all pre-?disease (?:activity|"
                r"performance)", re.I), 0),
    (re.compile(r"\brestricted in (?:physically )?strenuous activity\b|\bambulatory and (?:able|capable) (?:of|to carry out) "
                r"(?:light|sedentary) work", re.I), 1),
    (re.compile(r"\bcapable of (?:all )?self-?care but unable to (?:carry out|do) any work\b|\bup and about more than 50",
                re.I), 2),
    (re.compile(r"\bcapable of only limited self-?care\b|\bconfined to (?:a )?(?:bed|chair) (?:or (?:a )?(?:bed|chair) )?"
                r"(?:for )?more than 50", re.I), 3),
    (re.compile(r"\bcompletely disabled\b|\btotally confined to (?:a )?(?:bed|chair)\b|\bbed-?bound\b|\bbedridden\b",
                re.I), 4),
)


def ecog_in(text: str) -> int | None:
    """The ECOG grade a sentence states, from any performance-status spelling (Karnofsky/Lansky converted)."""
    e = _ECOG.search(text)
    if e:
        raw = e.group(1).lower()
        return _NUMBER_WORDS[raw] if raw in _NUMBER_WORDS else int(raw)
    k = _KARNOFSKY.search(text)
    if k and 0 <= int(k.group(1)) <= 100:
        return karnofsky_to_ecog(int(k.group(1)))
    for pattern, grade in _PS_WORDS:
        said = pattern.search(text)
        if said and assertion_at(text, said.start()) == "affirmed":
            return grade
    return None
_CONSENT = re.compile(r"\b(informed consent|consent)\b", re.I)
_COMPLY = re.compile(r"\b(compl(?:y|iance|iant)|adhere\w*|attend\w*|available)\b", re.I)
_WILL = re.compile(r"\b(will|agrees?|willing|able|has given|gave|signed|provided?)\b", re.I)
_HEALTHY = re.compile(r"\b(good (?:general )?health|healthy)\b", re.I)


# The lowest Karnofsky (or Lansky) score that maps to each ECOG grade, 0 to 5.
KARNOFSKY_LOWEST = (90, 70, 50, 30, 10, 0)


def karnofsky_to_ecog(score: int) -> int:
    """The usual ECOG grade for a Karnofsky (or Lansky) score: 100-90 -> 0, 80-70 -> 1, ... 10 -> 4, 0 -> 5."""
    return next((grade for grade, lowest in enumerate(KARNOFSKY_LOWEST) if score >= lowest), 5)


def _age_from(sentences: tuple[Sentence, ...]) -> tuple[float | None, tuple[int, ...]]:
    for sentence in sentences:
        for pattern in _AGE_PATTERNS:
            m = pattern.search(sentence.text)
            if m:
                unit = m.group(2) if m.lastindex == 2 else "year"
                return float(m.group(1)) * _UNIT_YEARS[unit.lower()], (sentence.id,)
        if _NEWBORN.search(sentence.text):
            return 0.0, (sentence.id,)
    return None, ()


def _sex_from(sentences: tuple[Sentence, ...]) -> tuple[Sex | None, tuple[int, ...]]:
    for sentence in sentences:
        female = _FEMALE_NOUN.search(sentence.text)
        male = _MALE_NOUN.search(sentence.text)
        if female and (not male or female.start() < male.start()):
            return "female", (sentence.id,)
        if male:
            return "male", (sentence.id,)
    text = " ".join(s.text for s in sentences)
    she, he = len(_FEMALE_PRONOUN.findall(text)), len(_MALE_PRONOUN.findall(text))
    if she > he:
        return "female", ()
    if he > she:
        return "male", ()
    return None, ()


def is_boilerplate(text: str) -> bool:
    """True for the stock sentence that the patient will consent and comply (it says nothing clinical)."""
    consent = _CONSENT.search(text)
    if consent is None or not _WILL.search(text):
        return False
    return assertion_at(text, consent.start(), consent.end()) != "negated"


def facts_from_note(note: str) -> PatientFacts:
    """Read age, sex, pregnancy, performance status and consent out of a clinical note."""
    sentences = split_note(note)
    age, age_ids = _age_from(sentences)
    sex, sex_ids = _sex_from(sentences)

    pregnant: bool | None = None
    pregnancy_ids: list[int] = []
    gestation: float | None = None
    for sentence in sentences:
        for m in _PREGNANT.finditer(sentence.text):
            status = assertion_at(sentence.text, m.start())
            if status == "affirmed" and pregnant is not False:
                pregnant = True
                pregnancy_ids.append(sentence.id)
            elif status == "negated" and not _PREGNANCY_DETAIL.match(sentence.text[m.end():]):
                pregnant = False
                pregnancy_ids.append(sentence.id)
        g = _GESTATION.search(sentence.text)
        if g:
            gestation = float(g.group(1) or g.group(2))
    if pregnant is True and sex is None:
        sex = "female"

    ecog: int | None = None
    ecog_ids: list[int] = []
    for sentence in sentences:
        grade = ecog_in(sentence.text)
        if grade is not None:
            ecog, ecog_ids = grade, [sentence.id]

    consent_ids = [s.id for s in sentences if is_boilerplate(s.text)]
    healthy: bool | None = None
    if any((said := _HEALTHY.search(s.text)) and assertion_at(s.text, said.start(), said.end()) == "affirmed"
           for s in sentences):
        healthy = True
    elif any(
        assertion_at(s.text, m.start, m.end) == "affirmed" and not m.absent
        for s in sentences
        if not is_boilerplate(s.text)
        for m in find_concepts(s.text)
    ):
        healthy = False  # a note that records an illness or symptom is not about a healthy volunteer
    return PatientFacts(
        sentences=sentences,
        age=age,
        sex=sex,
        pregnant=pregnant,
        gestation_weeks=gestation,
        healthy_volunteer=healthy,
        ecog=ecog,
        consent=bool(consent_ids),
        comply=any(
            (said := _COMPLY.search(s.text)) and _WILL.search(s.text)
            and assertion_at(s.text, said.start()) != "negated"
            for s in sentences
        ),
        complete_record=True,
        from_note=True,
        age_evidence=age_ids,
        sex_evidence=sex_ids,
        pregnancy_evidence=tuple(pregnancy_ids),
        ecog_evidence=tuple(ecog_ids),
        consent_evidence=tuple(consent_ids),
    )


def facts_from_profile(profile: PatientProfile) -> PatientFacts:
    """Turn a structured profile into statements the rules can search (each item is stated as present)."""
    statements = [f"Has {c}." for c in profile.conditions if c.strip()]
    statements += [f"Test result: {b}." for b in profile.biomarkers if b.strip()]
    statements += [f"Treated with {t}." for t in profile.treatments if t.strip()]
    sentences = [Sentence(i, text) for i, text in enumerate(statements)]
    if profile.notes:
        sentences += [Sentence(len(sentences) + s.id, s.text) for s in split_note(profile.notes)]
    return PatientFacts(
        sentences=tuple(sentences),
        age=profile.age,
        sex=profile.sex,
        pregnant=profile.pregnant,
        gestation_weeks=None,
        # Someone who lives with a named condition is not a healthy volunteer unless they say so.
        healthy_volunteer=(
            profile.healthy_volunteer if profile.healthy_volunteer is not None else (False if profile.conditions else None)
        ),
        ecog=profile.ecog,
        consent=True,
        comply=True,
        complete_record=False,
        from_note=False,
        labs=profile.labs,
    )


# --- Is a mention affirmed, negated, or about someone else? ------------------------------------

_NEGATION_BEFORE = re.compile(
    r"\b(no|not|denies|denied|deny|denying|without|never|negative for|free of|absence of|absent|"
    r"ruled out|rules out|r/o|no evidence of|no history of|no signs? of|no sign of|unremarkable for|"
    r"did not|does not|do not|has not|have not|had not|was not|were not|is not|are not|neither|nor|negative)\b",
    re.I,
)
_NEGATION_AFTER = re.compile(r"^\W{0,3}(?:was |were |is |are )?(?:negative|absent|ruled out|excluded|not (?:seen|found|present))\b", re.I)
_FAMILY = re.compile(r"\b(family history|mother|father|brother|sister|sibling|parents?|relatives?|grand(?:mother|father))\b", re.I)
# Words that end the reach of a negation or family cue.
_SCOPE_END = re.compile(
    r"\b(but|however|although|though|except|yet|whereas|while|apart from|aside from|which|who|presents?|presented|"
    r"complains?|complaining|reports?|reported|reveals?|revealed|shows?|showed|noted|is|was|are|were|has|had|"
    r"developed|underwent|admitted|now|currently|positive)\b|[.;:]|,\s*and\b|"
    r"\band(?=\s+(?:will|is|was|has|had|does|did|can|agrees?|takes?|uses?|reports?)\b)",
    re.I,
)
_MAX_SCOPE_WORDS = 14


def assertion_at(text: str, start: int, end: int | None = None) -> Assertion:
    """Whether the mention at ``text[start:end]`` is affirmed, negated, or about a relative."""
    before = text[:start]
    # Look back only as far as the last scope-ending word.
    window = before[max((m.end() for m in _SCOPE_END.finditer(before)), default=0):]
    if len(window.split()) > _MAX_SCOPE_WORDS:
        window = " ".join(window.split()[-_MAX_SCOPE_WORDS:])
    if end is None:
        word = re.match(r"[\w-]+", text[start:])
        end = start + (word.end() if word else 0)
    if re.match(r"^\W{0,3}(?:was |is |were |are |test )?positive\b", text[end:], re.I):
        return "affirmed"
    clause = re.split(r"[.;]|\b(?:but|however|although|though|whereas)\b", before)[-1]
    if _FAMILY.search(clause):
        return "family"
    if _NEGATION_BEFORE.search(window):
        return "negated"
    if _NEGATION_AFTER.match(text[end:]):
        return "negated"
    owned = re.search(r"\b(has|have|had|with|diagnosed|suffers?|developed|history of|known)\b",
                      re.split(r",|\band\b|:", clause)[-1], re.I)
    if (not owned and _list_negated_after(text[end:])) or _list_negated_before(clause):
        return "negated"
    return "affirmed"


# A status word after a list covers every item of the list: "HIV, hepatitis B and C tests negative".
_LIST_STATUS_AFTER = re.compile(
    r"^\s*(?:(?:tests?|testing|serolog\w*|screen\w*|results?|antibod\w*|antigens?|PCR|status|infections?|"
    r"mutations?|alterations?|rearrangements?|fusions?)\s+)?"
    r"(?:(?:was|were|is|are|all|both|came back|returned|tested|found|reported|confirmed)\s+)*"
    r"(?:negative|non-?reactive|not detected|undetectable|wild[- ]?type|absent|ruled out|excluded)\b",
    re.I,
)
_LIST_JOIN = re.compile(r"^\s*(?:,\s*(?:and|or|nor)?|and|or|nor|/|&)\s*", re.I)
_NOT_A_LIST_ITEM = re.compile(
    r"\b(positive|detected|present|with|has|had|have|shows?|showed|reveals?|revealed|but|however|which|who|"
    r"reports?|reported|complains?|presents?|presented|developed|underwent|is|was|are|were)\b",
    re.I,
)
_LIST_CUE_BEFORE = re.compile(
    r"\b(?:no|denies|denied|without|negative for|free of|absence of|no evidence of|no history of|no signs? of|"
    r"tested negative for|ruled out)\s+(?P<items>[^.;:]*)$",
    re.I,
)


def _list_items(text: str) -> list[str] | None:
    """Short items joined by commas, 'and', 'or' ("HBV, and HCV"), or None when the text is not such a list."""
    pieces = [p.strip() for p in re.split(r",|\band\b|\bor\b|\bnor\b|/|&", text, flags=re.I)]
    items = [p for p in pieces if p]
    if any(len(p.split()) > 4 or _NOT_A_LIST_ITEM.search(p) for p in items):
        return None
    return items


def _list_negated_after(tail: str) -> bool:
    """Whether the mention is one item of a list that a later status word states negative."""
    clause = re.split(r"[.;:]|\b(?:but|however|although|whereas|while)\b", tail, maxsplit=1, flags=re.I)[0]
    if not _LIST_JOIN.match(clause) and not _LIST_STATUS_AFTER.match(clause):
        return False
    # The list items after the mention run up to the first status word.
    m = re.search(r"\b(?:tests?|testing|serolog\w*|screen\w*|results?|antibod\w*|antigens?|PCR|status|"
                  r"infections?|mutations?|alterations?|rearrangements?|fusions?|was|were|is|are|all|both|"
                  r"came|returned|tested|found|reported|confirmed|negative|non-?reactive|not detected|"
                  r"undetectable|wild[- ]?type|absent|ruled out|excluded)\b", clause, re.I)
    if m is None or not _LIST_STATUS_AFTER.match(clause[m.start():]):
        return False
    between = clause[: m.start()]
    return len(between.strip()) == 0 or (_list_items(between) is not None and len(between.split()) <= 24)


def _list_negated_before(clause: str) -> bool:
    """Whether the mention ends a list that a negation cue opened: "negative for HIV, HBV, and HCV"."""
    m = _LIST_CUE_BEFORE.search(clause)
    if m is None:
        return False
    items = m.group("items")
    return _list_items(items) is not None and len(items.split()) <= 24
