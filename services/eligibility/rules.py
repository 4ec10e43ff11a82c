"""Offline rule evaluator: judges one criterion against a patient profile or a clinical note.

The rules decide what structure allows -- age (with units and ranges), sex, pregnancy and
lactation, healthy volunteers, ECOG/Karnofsky performance status, consent and compliance, a few
measurements (temperature, haemoglobin, BMI, weight, gestational age), lab limits judged from the latest
uploaded lab values (creatinine, eGFR, ALT, AST, bilirubin, ANC, platelets, HbA1c, LDL), and named conditions,
treatments and test results that are present or negated -- and say "not enough information"
otherwise.  A model-based evaluator can take over the rest through :data:`CriterionEvaluator`.

Reading a clinical note: a note written as a complete case summary is read the way a clinician
reads one.  For an *exclusion* criterion, a condition the note does not mention is taken as
absent, so the exclusion is "not met"; for an *inclusion* criterion the note must say it.  A
structured profile is not a complete record, so there an unmentioned condition stays unknown.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from services.eligibility import cues
from services.eligibility.labels import Label, check_kind
from services.eligibility.limit_context import UNREAD_ROLES, limit_role
from services.eligibility.measures import STATE_CUES, limits_in
from services.eligibility.measures import judge as judge_limit
from services.eligibility.parser import Criterion, CriterionKind, criterion_sentences, unescape_markdown
from services.eligibility.patient import (
    KARNOFSKY_LOWEST,
    PatientFacts,
    PatientProfile,
    assertion_at,
    facts_from_note,
    facts_from_profile,
    is_boilerplate,
    karnofsky_to_ecog,
)
from services.eligibility.scope import label_meaning, outside_scope, own_disease_named, split_label
from services.eligibility.statements import (
    age_text,
    comparison,
    grades_allowed,
    in_weeks,
    life_expectancy,
    measurable_disease,
    nyha_class,
    organ_function,
    own_sex_sentences,
    pd_l1,
    permissive_sentences,
    sex_scope,
)
from services.eligibility.therapy_lines import therapy_lines
from services.eligibility.vocabulary import (
    ConceptMatch,
    ancestors,
    concept_index,
    find_concepts,
    other_drug_of_class,
)
from services.errors import BadInput

__all__ = [
    "MAX_CRITERION_CHARS",
    "CriterionEvaluator",
    "Judgement",
    "PatientProfile",
    "criterion_text_for",
    "evaluate",
    "patient_facts",
]


@dataclass(frozen=True)
class Judgement:
    """The label for one criterion, one plain sentence saying why, and the note sentences relied on."""

    label: Label
    reason: str
    evidence_sentence_ids: tuple[int, ...] = ()
    source: str = "rules"


Patient = PatientProfile | PatientFacts | str


class CriterionEvaluator(Protocol):
    """Anything that can judge one criterion for one patient (the rules, or a model via services/llm.py)."""

    def __call__(self, criterion_text: str, kind: CriterionKind, patient: Patient) -> Judgement: ...


_facts_for_note = lru_cache(maxsize=256)(facts_from_note)


def patient_facts(patient: Patient) -> PatientFacts:
    """The facts the rules use, from a profile, a clinical note, or facts already read."""
    if isinstance(patient, PatientFacts):
        return patient
    if isinstance(patient, PatientProfile):
        return facts_from_profile(patient)
    if isinstance(patient, str):
        return _facts_for_note(patient)
    raise BadInput(f"cannot evaluate criteria against a {type(patient).__name__}")


# --- Text helpers ------------------------------------------------------------------------------

_PARENS = re.compile(r"\([^()]*\)|\[[^\[\]]*\]")
_WORD = re.compile(r"[a-z][a-z0-9'’]*|\d+(?:[.,]\d+)?")
_NUMBER_TOKEN = "#"

# Words that carry no requirement of their own.
GENERIC_WORDS_CSV = Path(__file__).resolve().parents[2] / "data" / "eligibility" / "generic_words.csv"


def csv_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a data file (read when the module loads)."""
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


_GENERIC = frozenset(
    """
    a an the of in on for at by to from as is are was were be been being do does did and or nor also either both
    all each any other another such including include includes included e.g eg i.e ie etc per than more less
    with who which whom whose that this these those there their his her its they them he she it
    must should will may can could would shall might
    have has had having get got
    patient patients subject subjects participant participants individual individuals person persons people
    case cases volunteer volunteers
    history known diagnosis diagnosed diagnoses clinical clinically confirmed documented documentation evidence
    histologically cytologically histological cytological histology cytology pathologically pathological proven
    radiologically radiographically radiological verified objectively
    treated treat receiving received receive taking take use using used daily once twice greater equal
    treatment treatments agent agents drug drugs regimen regimens medication medications antibody antibodies
    evident presence present presenting presents presented current currently prior previous previously
    defined definition according criteria criterion condition conditions disease diseases disorder disorders
    illness illnesses syndrome syndromes problem problems suspected suspicion suspect
    onset episode episodes symptom symptoms sign signs suffering suffer suffers experience experiences experiencing
    undergo undergoing underwent affected affecting
    study trial screening baseline enrollment enrolment entry randomization randomisation visit admission
    hospital time inclusion exclusion eligible ineligible based if then when
    dsm dsm-iv iv dsm-5 icd nos gold who whom
    """.split()
) | frozenset(row["word"] for row in csv_rows(GENERIC_WORDS_CSV))  # who set a plan, what it is called
_UNIT_WORDS = frozenset(
    """
    mg dl kg mm hg ml min m2 mmol umol ul mcg ng iu celsius fahrenheit degree degrees percent cm ms msec bpm
    kilogram kilograms gram grams milligram milligrams microgram micrograms square metre metres meter meters
    """.split()
)
# Words that belong to an age or sex requirement once that requirement has been read.
_AGE_SEX_WORDS = frozenset(
    """
    age aged ages old year years yrs months month weeks days inclusive onward onwards older younger
    life adult adults child children
    infant infants minor minors male males female females man men woman women boy boys girl girls gender genders sex sexes
    """.split()
)
# Words that narrow a condition ("severe", "uncontrolled"); a note has to say them too for a match.
_SEVERITY = frozenset(
    """
    severe severely uncontrolled uncontrollable unstable significant significantly active advanced decompensated
    symptomatic refractory malignant secondary requiring require requires acute chronic moderate poorly controlled
    untreated uncured unresolved intractable persistent recurrent major serious overt mild
    """.split()
)
# A number in a criterion is taken as part of a time limit ("within 6 months").
_TIME = frozenset("recent recently within months month weeks week years year days day hours hour past last since ago "
                  "concomitant concurrent ongoing".split()) | {_NUMBER_TOKEN}
_QUALIFIERS = _SEVERITY | _TIME
_TOKEN_SYNONYMS = {
    "ekg": "ecg",
    "electrocardiogram": "ecg",
    "electrocardiography": "ecg",
    "radiograph": "xray",
    "radiography": "xray",
    "x-ray": "xray",
    "cxr": "xray",
    "er": "emergency",
    "haemoglobin": "hemoglobin",
    "hb": "hemoglobin",
    "oesophagus": "esophagus",
    # An organ's adjective and its noun are the same place ("abdominal ultrasound" = "ultrasound of the abdomen").
    "abdominal": "abdomen",
    "thoracic": "thorax",
    "cardiac": "heart",
    "renal": "kidney",
    "hepatic": "liver",
    "pulmonary": "lung",
    "cerebral": "brain",
    "gastric": "stomach",
}
_PHRASE_SYNONYMS = (
    (re.compile(r"\bemergency (?:room|department|unit)\b"), "emergency"),
    (re.compile(r"\bcomputed tomography\b"), "ct"),
    (re.compile(r"\bmagnetic resonance imaging\b"), "mri"),
    (re.compile(r"\bchest x-?rays?\b"), "chest xray"),
)


_METHOD_PAIR = re.compile(r"\b(histolog\w*|cytolog\w*|patholog\w*)\s*(?:and/or|or|and|/)\s*(histolog\w*|cytolog\w*|patholog\w*)",
                          re.I)


def _normalise(text: str) -> str:
    text = unescape_markdown(text)
    text = _METHOD_PAIR.sub(lambda m: m.group(1) + " " * (len(m.group(0)) - len(m.group(1))), text)
    for src, dst in (("≥", ">="), ("≤", "<="), ("＞", ">"), ("＜", "<"), ("–", "-"), ("—", "-"), ("−", "-"),
                     ("℃", " C"), ("°", " "), ("\u00a0", " ")):
        text = text.replace(src, dst)
    return re.sub(r"\s+", " ", text).strip()


def _stem(word: str) -> str:
    word = word.lower().strip("'’-")
    word = _TOKEN_SYNONYMS.get(word, word)
    for suffix in ("ications", "ication", "ations", "ation", "ings", "ing", "ies", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def _content_words(text: str) -> list[str]:
    lowered = text.lower()
    for pattern, replacement in _PHRASE_SYNONYMS:
        lowered = pattern.sub(replacement, lowered)
    words = []
    for w in _WORD.findall(lowered):
        w = re.sub(r"['’]s$", "", w).rstrip("'’")  # the possessive: "physician's" is "physician"
        if w[0].isdigit():
            words.append(_NUMBER_TOKEN)
        elif w not in _GENERIC and w not in _UNIT_WORDS and len(w) > 1:
            words.append(w)
    return words


# --- What a criterion asks about -----------------------------------------------------------------


@dataclass
class _Finding:
    """One aspect of a criterion checked against the patient."""

    aspect: str
    truth: bool | None
    reason: str
    evidence: tuple[int, ...] = ()
    descriptor: bool = False  # describes who the criterion is about (age, sex) rather than a condition
    open_question: bool = False  # unknown even in a complete record (pregnancy status, a test not done)
    discuss: bool = False  # partly matches; needs a clinician's judgement
    closed_reason: str = ""  # how to say it when a complete record's silence settles the question
    not_applicable: bool = False  # the criterion cannot concern this patient (pregnancy rules for a man)
    standalone: bool = False  # an age or sex item of its own in a list ("Age < 18 years, prisoners")


_UNIT = r"(?P<{n}>years?|yrs?|y\.?o\.?|months?|mos?|weeks?|wks?|days?)"
_NUM = r"(?<![A-Za-z0-9.])(?P<{n}>\d{{1,3}}(?:\.\d+)?)"  # "CD22+" and "1.5" hold no age
_DURATION_BEFORE = re.compile(
    r"\b(for|within|since|past|last|prior|history|ago|after|before|during|duration|lasting|period|least\s+\w+\s+of|"
    r"interval|every|each|per|from diagnosis|follow-?up|survival|expectancy|remission|stable)\s*$",
    re.I,
)
_DURATION_AFTER = re.compile(r"^\s*(since|ago|after|before|prior|(?:of )?(?:treatment|therapy|exposure|use|history|follow)|"
                             r"duration|from|post|following|in duration|period)", re.I)
_AGE_WORD = re.compile(r"\b(age[ds]?|years? old|year-old|yrs? old|of age|adults?|children|child|infants?|minors?|"
                       r"elderly|paediatric|pediatric|adolescents?|newborns?|neonates?)\b", re.I)


def _unit_years(unit: str | None) -> float:
    """The length of one unit (as _UNIT spells it) in years (1 for years, and when no unit is written)."""
    return {"m": 1 / 12, "w": 7 / 365.25, "d": 1 / 365.25}.get((unit or "")[:1].lower(), 1.0)


@dataclass(frozen=True)
class AgeRange:
    """An age requirement in years; bounds are inclusive unless marked strict."""

    low: float | None
    high: float | None
    low_strict: bool = False
    high_strict: bool = False
    high_whole_years: bool = False  # "up to 17 years" includes 17 years and 11 months
    either: bool = False  # "< 18 or > 65": two limits of which one holds (high < low), not one range

    def contains(self, age: float) -> bool:
        """Whether a person of this age (in years) is inside the range."""
        if self.either and self.low is not None and self.high is not None:
            below = age < self.high if self.high_strict else age <= self.high
            above = age > self.low if self.low_strict else age >= self.low
            return below or above
        if self.low is not None and (age < self.low or (self.low_strict and age <= self.low)):
            return False
        if self.high is None:
            return True
        if self.high_whole_years and not self.high_strict:
            return age < self.high + 1
        return age < self.high if self.high_strict else age <= self.high

    def describe(self) -> str:
        """The range in words, e.g. "18 to 75 years"."""
        if self.either and self.low is not None and self.high is not None:
            return (("under " if self.high_strict else "at most ") + age_text(self.high) + " or "
                    + ("over " if self.low_strict else "at least ") + age_text(self.low))
        if self.low is not None and self.high is not None:
            return f"{age_text(self.low)} to {age_text(self.high)}"
        if self.low is not None:
            return ("over " if self.low_strict else "at least ") + age_text(self.low)
        if self.high is not None:
            return ("under " if self.high_strict else "at most ") + age_text(self.high)
        return "any age"


_RANGE = re.compile(
    r"(?:\b(?:between|from)\s+)?" + _NUM.format(n="a") + r"\s*" + _UNIT.format(n="ua") + r"?\s*"
    r"(?:-|to|and|through|until)\s*" + _NUM.format(n="b") + r"\s*" + _UNIT.format(n="ub") + r"?\b",
    re.I,
)
_LOW = re.compile(
    r"(?:>=|=>|>|\bat least|\bover|\bolder than|\bgreater than|\babove|\bmore than|\bminimum(?: age)?(?: of)?|\bfrom)"
    r"\s*(?:the age of\s*|age\s*)?" + _NUM.format(n="n") + r"\s*" + _UNIT.format(n="u") + r"?",
    re.I,
)
_LOW_AFTER = re.compile(
    _NUM.format(n="n") + r"\s*" + _UNIT.format(n="u") + r"?\s*(?:of age\s*|old\s*)?"
    r"(?:(?:or|and)\s+(?:older|over|above|greater|more|up)|\+|onwards?|and beyond)",
    re.I,
)
_HIGH = re.compile(
    r"(?:<=|=<|<|\bunder|\byounger than|\bless than|\bbelow|\bup to|\bnot older than|\bno older than|"
    r"\bmaximum(?: age)?(?: of)?|\bbeyond)"
    r"\s*(?:the age of\s*|age\s*)?" + _NUM.format(n="n") + r"\s*" + _UNIT.format(n="u") + r"?",
    re.I,
)
_HIGH_AFTER = re.compile(
    _NUM.format(n="n") + r"\s*" + _UNIT.format(n="u") + r"?\s*(?:of age\s*|old\s*)?(?:or|and)\s+(?:younger|under|below|less)",
    re.I,
)


def _age_context_ok(text: str, start: int, end: int, unit: str | None) -> bool:
    before = text[max(0, start - 30) : start]
    after = text[end : end + 30]
    if _DURATION_BEFORE.search(before) or _DURATION_AFTER.search(after):
        return False
    if re.search(r"gestation(?:al)?(?: age)?\W*(?:of\W*)?$", before, re.I) or re.search(
        r"\b(onset|diagnosis|diagnosed|menarche|menopause)\b[^.;]*$", before, re.I
    ):
        return False  # the age at some event, not the patient's age now
    if re.search(r"\b(age[ds]?|aged|old|age of)\W*$", before, re.I) or re.match(r"\s*(?:years?\s*)?(old|of age)\b", after, re.I):
        return True
    if unit is None:
        return bool(re.search(r"\bage[ds]?\b", before[-15:], re.I))
    return _unit_years(unit) >= 1 / 13 and bool(_AGE_WORD.search(text) or re.match(r"^\W*(?:patients?|subjects?|participants?|"
                                                                        r"individuals?|men|women|males?|females?|"
                                                                        r"persons?|people|\w+\s+)?\W*$", text[:start], re.I))


def _numeric_age(candidate: str) -> tuple[AgeRange | None, list[tuple[int, int]]]:
    """An age range written with numbers, or (None, [])."""
    for m in _RANGE.finditer(candidate):
        ua, ub = m.group("ua"), m.group("ub")
        a, b = float(m.group("a")), float(m.group("b"))
        if a > b or (ua is None and ub is None and not re.search(r"\bage[ds]?\b", candidate[max(0, m.start() - 15) : m.start()], re.I)):
            continue
        if not _age_context_ok(candidate, m.start(), m.end(), ub or ua):
            continue
        unit_b = _unit_years(ub or ua)
        unit_a = _unit_years(ua or ub)
        if a * unit_a >= b * unit_b:
            continue  # "1 year to 3 months", "18 to 18": not a range a person can be in
        return AgeRange(a * unit_a, b * unit_b, high_whole_years=unit_b == 1.0), [(m.start(), m.end())]
    spans: list[tuple[int, int]] = []
    low_years: float | None = None
    high_years: float | None = None
    low_strict = high_strict = whole_years = False
    low = _age_bound(candidate, _LOW, _LOW_AFTER)
    if low:
        low_years = float(low.group("n")) * _unit_years(low.group("u"))
        # A bound written after the number ("18 or older") starts with a digit, so it is never strict.
        low_strict = bool(re.match(r"(>(?!=)|over|older|greater|above|more)", low.group(0).strip(), re.I))
        spans.append(low.span())
    high = _age_bound(candidate, _HIGH, _HIGH_AFTER)
    if high:
        unit = _unit_years(high.group("u"))
        high_years = float(high.group("n")) * unit
        head = high.group(0).strip().lower()
        strict = head.startswith(("<", "under", "younger", "less", "below", "beyond"))
        high_strict = strict and not head.startswith("<=")
        whole_years = unit == 1.0
        spans.append(high.span())
    if not spans:
        return None, []
    if high_years and re.search(r"\bbeyond\b", candidate, re.I):
        # "beyond age 50" describes people older than 50.
        return AgeRange(high_years, None, low_strict=True), spans
    if low_years is not None and high_years is not None and low_years >= high_years:
        # "< 18 or > 65" is two limits, one of which holds; any other empty range is a misreading, not shown.
        apart = candidate[min(a for a, _ in spans):max(b for _, b in spans)]
        if low_years > high_years and re.search(r"\bor\b", apart, re.I):
            return AgeRange(low_years, high_years, low_strict, high_strict, either=True), spans
        return None, []
    return AgeRange(low_years, high_years, low_strict, high_strict, high_whole_years=whole_years), spans


def _age_bound(candidate: str, before: re.Pattern[str], after: re.Pattern[str]) -> re.Match[str] | None:
    """The first bound that reads as an age: with its word before the number, else with its word after it."""
    for m in before.finditer(candidate):
        if _age_context_ok(candidate, m.start(), m.end(), m.group("u")):
            return m
    for m in after.finditer(candidate):
        number_end = m.start() + len(m.group("n"))
        if _age_context_ok(candidate, m.start(), number_end, m.group("u")) or m.group(0).endswith("+"):
            return m
    return None


# Age groups named by a word ("Adults", "Children") and the ranges they mean; "child" inside a term that
# names no group ("Child-Pugh", "child-bearing") is not one (data/eligibility/age_groups.csv).
AGE_GROUP_CUES = cues.CueFile(GENERIC_WORDS_CSV.parent / "age_groups.csv", ("group", "not_group"))


def _years(cell: str) -> float | None:
    return None if cell == "none" else float(cell)


@lru_cache(maxsize=1)
def age_groups() -> dict[str, AgeRange]:
    """Each group word and the age range it means."""
    return {r.cue: AgeRange(_years(r.checks["min_years"]), _years(r.checks["max_years"]),
                            high_strict=r.checks["upper"] == "below")
            for r in AGE_GROUP_CUES.rows() if "group" in r.roles}


_AGE_GROUP_WORD = AGE_GROUP_CUES.compile("group")
_NOT_AGE_GROUP = re.compile(AGE_GROUP_CUES.words("not_group"), re.I)


# A limit written right after the group's name, without the word "age": "Children under 12", "Adults (>= 21)".
_GROUP_BOUND = re.compile(r"\W{0,3}(?:aged?\s+)?(?:under|younger than|less than|below|over|older than|above|[<>]=?)\s*"
                          r"\d{1,3}(?:\.\d+)?(?!\s*(?:kg|%|cm|mg|lb|[.,]?\d))", re.I)


def _keyword_age(norm: str) -> tuple[AgeRange | None, list[tuple[int, int]]]:
    """An age group named by a word ("adults", "children"), or (None, [])."""
    m = next((g for g in _AGE_GROUP_WORD.finditer(norm) if not _NOT_AGE_GROUP.match(norm, g.start())), None)
    if m is None or len(norm[: m.start()].split()) > 4:
        return None, []  # only a group named as the criterion's subject ("Adults with ...") sets an age
    bound = _GROUP_BOUND.match(norm, m.end())
    if bound:
        # The number is the limit ("under 12", not the 18 that "children" alone would mean), in the unit written.
        written, _ = _numeric_age("age " + norm[bound.start():bound.end() + 12])
        if written is not None:
            return written, [(m.start(), bound.end())]
    return age_groups().get(m.group(0).lower()), [m.span()]


def parse_age_range(text: str) -> tuple[AgeRange | None, list[tuple[int, int]]]:
    """The age requirement written in a criterion ("18-75 years", ">= 18 years of age", "aged 40 to 80")."""
    norm = _normalise(text)
    main = _PARENS.sub(lambda m: " " * len(m.group(0)), norm)
    for found in (_numeric_age(main), _keyword_age(main)):
        if found[0] is not None:
            return found
    # An age only in brackets counts when the criterion says little else ("Adult (>= 18 years)").
    if len(_content_words(main)) <= 3:
        return _numeric_age(norm)
    return None, []


# An age that describes the patient's relatives: "sudden death under 40 years of age in first-degree relatives",
# "family history of colon cancer before age 50".
_RELATIVES_AFTER = re.compile(r"^\W*(?:of age\W*)?(?:in|among|of)\s+(?:a\s+|any\s+|one or more\s+)?"
                              r"(?:(?:first|second)[- ]degree\s+|close\s+|blood\s+)?(?:relatives?|family|siblings?|"
                              r"parents?|brothers?|sisters?|mother|father|offspring)\b", re.I)
_FAMILY_BEFORE = re.compile(r"\bfamily (?:history|member)|\brelatives?\b", re.I)


# An age followed by what people of that age must do: the age says whom the rule is for, it sets no limit.
_AGE_AS_SUBJECT = re.compile(r"^[^.;]{0,30}?\b(?:must|should|need to|needs to|are required|is required|"
                             r"have to|"
                             r"has to|will need)\b", re.I)


def _age_finding(text: str, facts: PatientFacts) -> tuple[_Finding | None, list[tuple[int, int]]]:
    age_range, spans = parse_age_range(text)
    if age_range is None:
        return None, []
    start, end = spans[0]
    clause = re.split(r"[;.]", text[:start])[-1]
    if _RELATIVES_AFTER.search(text[end:end + 60]) or _FAMILY_BEFORE.search(clause):
        return None, []  # the age is the relatives', not the patient's
    if _AGE_AS_SUBJECT.match(text[end:].split(";")[0]):
        return None, []  # "Pediatric patients less than 16 years of age must decline ...": whom a rule is for
    if facts.age is None:
        return _Finding("age", None, f"The trial asks for age {age_range.describe()}, and the age is not known.",
                        descriptor=True, open_question=True), spans
    inside = age_range.contains(facts.age)
    each = [r for r in (parse_age_range(part)[0] for part in criterion_sentences(text)) if r is not None]
    if len({r.describe() for r in each}) > 1 and len({r.contains(facts.age) for r in each}) > 1:
        # "Subjects aged <= 30. First 2 enrolled subjects: age >= 18": different limits for different people
        limits = "; ".join(r.describe() for r in each)
        return _Finding("age", None, f"The line sets different age limits ({limits}) for different people; "
                        "ask the trial team which applies.", descriptor=True,
                        discuss=True, open_question=True), spans
    verdict = "within" if inside else "outside"
    limits = f"the limits {age_range.describe()}" if age_range.either else f"the range {age_range.describe()}"
    return _Finding("age", inside, f"Age {age_text(facts.age)} is {verdict} {limits}.",
                    facts.evidence(facts.age_evidence), descriptor=True), spans


# Sex words (data/eligibility/sex_cues.csv): a line for either sex, for women, for men; a sex word followed by
# "partner" ("his female partner") names the partner's sex, not the patient's.
SEX_CUES = cues.CueFile(GENERIC_WORDS_CSV.parent / "sex_cues.csv", ("both", "female", "male", "partner"))
_BOTH_SEXES = SEX_CUES.compile("both")
_NOT_PARTNER = rf"(?!\s+{SEX_CUES.words('partner')})"
_FEMALE_WORDS = re.compile(SEX_CUES.words("female") + _NOT_PARTNER, re.I)
_MALE_WORDS = re.compile(SEX_CUES.words("male") + _NOT_PARTNER, re.I)


def _sex_finding(text: str, facts: PatientFacts) -> tuple[_Finding | None, list[tuple[int, int]]]:
    both = _BOTH_SEXES.search(text)
    if both:
        return _Finding("sex", True, "The trial takes people of any sex.", descriptor=True), [both.span()]
    female = list(_FEMALE_WORDS.finditer(text))
    male = list(_MALE_WORDS.finditer(text))
    if male and not female and _PREGNANCY_WORDS.search(text):
        return None, []  # "pregnant ..., or men who ..." concerns both sexes
    if bool(female) == bool(male):
        return None, []
    wanted = "female" if female else "male"
    spans = [m.span() for m in (female or male)]
    if facts.sex is None:
        return _Finding("sex", None, f"The criterion is about {wanted} patients, and the sex is not known.",
                        descriptor=True, open_question=True), spans
    same = facts.sex == wanted
    first = (female or male)[0]
    after = text[first.end():].strip()
    # A sex word that opens who the trial is for ("Women aged 18-65", "Female", "Postmenopausal women with
    # breast cancer") is a requirement; one heading a formula or a side remark ("Woman CrCl = ...") is not.
    requirement = not _SCOPE_WORDS.search(text) and (len(text.split()) <= 12 or bool(re.match(
        r"(?:\W*(?:patients?|participants?|subjects?|volunteers?|only|gender|sex)\b)?\W*(?:with|aged?|age|of|who|"
        r"between|>=|<=|[<>≥≤]|\d|diagnosed|having|that|which|must be|are|is|only|\)|$)",
        after, re.I)))
    if not same and not requirement:
        return _Finding("sex", None, f"This line speaks about {wanted} patients; it does not concern a {facts.sex} "
                        "patient.", facts.evidence(facts.sex_evidence), descriptor=True, not_applicable=True), spans
    return _Finding("sex", same, f"The criterion is about {wanted} patients and this patient is {facts.sex}.",
                    facts.evidence(facts.sex_evidence), descriptor=True), spans


# Pregnancy, breastfeeding and contraception: cue words in data/eligibility/pregnancy_cues.csv, by role.
PREGNANCY_CUES = cues.CueFile(GENERIC_WORDS_CSV.parent / "pregnancy_cues.csv",
                              ("scope", "pregnancy", "conditional", "breastfeeding", "men_too",
                               "nursing_place", "avoided", "own_birth"))


# Words that make a sex-specific line about pregnancy prevention rather than about who may take part.
_SCOPE_WORDS = PREGNANCY_CUES.compile("scope")
_PREGNANCY_WORDS = PREGNANCY_CUES.compile("pregnancy")
# A pregnancy line that asks something only of some women ("of childbearing potential", "if female").
_CONDITIONAL_PREGNANCY = PREGNANCY_CUES.compile("conditional")
_NOT_PREGNANT = re.compile(r"\b(not|non|no)[- ]+(?:be(?:ing)? )?(?:pregnant|pregnancy|lactating|breast[- ]?feeding)", re.I)
_GESTATION_LIMIT = re.compile(
    r"gestation(?:al age)?\s*(?:of\s*)?(?P<op><=|>=|<|>|less than|under|more than|over|at least|up to)\s*(?P<n>\d{1,2})\s*weeks?",
    re.I,
)
_BREASTFEEDING = PREGNANCY_CUES.compile("breastfeeding")
_CHILDBEARING_AGE = (10.0, 60.0)  # outside this range a woman is taken as unable to be pregnant
# Words that make a pregnancy-prevention line ask something of men as well ("subjects of child-fathering
# potential").
_MEN_TOO = PREGNANCY_CUES.compile("men_too")
# "Nursing" that names a place or its staff, not breastfeeding.
_NURSING_PLACE = PREGNANCY_CUES.compile("nursing_place", end=False)
# A line that asks to avoid a pregnancy (or breastfeeding) does not ask for a pregnant patient.
_PREGNANCY_AVOIDED = PREGNANCY_CUES.compile("avoided", end=False)
# The patient's own birth (a trial of newborns), not a pregnancy.
_OWN_BIRTH = PREGNANCY_CUES.compile("own_birth")


def _pregnancy_finding(text: str, kind: CriterionKind, facts: PatientFacts) -> tuple[_Finding | None, list[tuple[int, int]]]:
    words = list(_PREGNANCY_WORDS.finditer(text))
    if _OWN_BIRTH.search(text) and not re.search(r"\bpregnan", text, re.I):
        return None, []  # the patient's own birth, not a pregnancy
    if not words or all(w.group(0).lower() == "nursing" and _NURSING_PLACE.search(text) for w in words):
        return None, []
    first_words = len(text[: words[0].start()].split())
    if first_words > 8 and len(text.split()) > 12:
        return None, []  # pregnancy is one detail of a longer criterion, not what it is about
    spans = [w.span() for w in words] + [m.span() for m in _GESTATION_LIMIT.finditer(text)]
    conditional = bool(_CONDITIONAL_PREGNANCY.search(text))
    negated = bool(_NOT_PREGNANT.search(text))
    cannot = facts.sex == "male" or (
        facts.sex == "female" and facts.age is not None
        and not _CHILDBEARING_AGE[0] <= facts.age < _CHILDBEARING_AGE[1]
    )
    if facts.sex == "male" and _MEN_TOO.search(text) and _PREGNANCY_AVOIDED.search(text):
        return _Finding("pregnancy", None, "This line also asks something of men (such as contraception); "
                        "the trial team checks it with you.", open_question=True), spans
    if cannot:
        who = "a man" if facts.sex == "male" else f"a woman aged {facts.age:g}"
        if kind == "inclusion" and not conditional and not negated and not _PREGNANCY_AVOIDED.search(text):
            return _Finding("pregnancy", False, f"The trial is for pregnant women and this patient is {who}.",
                            facts.evidence(facts.sex_evidence + facts.age_evidence)), spans
        return _Finding("pregnancy", None, f"Pregnancy rules do not apply to {who}.",
                        facts.evidence(facts.sex_evidence + facts.age_evidence), not_applicable=True), spans
    feeding = _breastfeeding(facts)
    if not re.search(r"pregnan|gestation|pregnency", text, re.I) and not conditional:
        # Only breastfeeding is asked about; a pregnancy status does not answer that, the note's own words may.
        if feeding is None:
            return _Finding("pregnancy", None, "Whether the patient is breastfeeding is not known.",
                            open_question=True), spans
        return _Finding("pregnancy", feeding[0] != negated, f"{facts.source} says the patient "
                        f"{'is' if feeding[0] else 'is not'} breastfeeding.", facts.evidence([feeding[1]])), spans
    if facts.pregnant is None or (conditional and not negated and kind == "inclusion"):
        return _Finding("pregnancy", None, "Whether the patient is pregnant or could become pregnant is not known.",
                        open_question=True), spans
    truth = facts.pregnant
    reason = "The patient is pregnant." if facts.pregnant else "The patient is not pregnant."
    limit = _GESTATION_LIMIT.search(text)
    if truth and limit and facts.gestation_weeks is not None:
        op, n = limit.group("op").lower(), float(limit.group("n"))
        weeks = facts.gestation_weeks
        truth = _compare(weeks, op, n)
        reason = f"The patient is {weeks:g} weeks pregnant; the criterion asks for {op} {n:g} weeks."
    evidence = list(facts.pregnancy_evidence)
    if facts.pregnant is False and any(not _NURSING_PLACE.match(text, w.start()) for w in _BREASTFEEDING.finditer(text)):
        # "Pregnant or breastfeeding": not being pregnant settles only half of it.
        if feeding is not None:
            truth = feeding[0]
            reason = "The patient is not pregnant and " + (f"{facts.source.lower()} says the patient is breastfeeding."
                                                           if truth else "not breastfeeding.")
            evidence.append(feeding[1])
        elif facts.complete_record:
            reason = f"The patient is not pregnant, and {facts.source.lower()} does not mention breastfeeding."
        else:
            return _Finding("pregnancy", None, "The patient is not pregnant, but whether they are breastfeeding is "
                            "not known.", open_question=True), spans
    if negated:
        truth = not truth
    return _Finding("pregnancy", truth, reason, facts.evidence(evidence)), spans




def _breastfeeding(facts: PatientFacts) -> tuple[bool, int] | None:
    """Whether the first sentence that speaks of breastfeeding says the patient is, and that sentence's id."""
    for sentence in facts.sentences:
        said = _BREASTFEEDING.search(sentence.text)
        if said and not _NURSING_PLACE.search(sentence.text):
            return assertion_at(sentence.text, said.start(), said.end()) == "affirmed", sentence.id
    return None


# The performance scales by name: ECOG and its other names, Karnofsky and Lansky (read as Karnofsky,
# converted to ECOG); "WHO" is the ECOG scale only in capitals and before its own words
# (data/eligibility/performance_scales.csv).
PERFORMANCE_SCALES = cues.CueFile(GENERIC_WORDS_CSV.parent / "performance_scales.csv", ("ecog", "karnofsky"))
_ECOG_NAMES = PERFORMANCE_SCALES.words("ecog")
_KARNOFSKY_NAMES = PERFORMANCE_SCALES.words("karnofsky")
_PERFORMANCE = re.compile(
    rf"{_ECOG_NAMES}(?:\s*\(ECOG\))?|(?-i:\bWHO)(?: performance| PS)\b|{_KARNOFSKY_NAMES}", re.I
)
_PS_NUMBER_WORDS = (("zero", "0"), ("one", "1"), ("two", "2"), ("three", "3"), ("four", "4"))


def _allowed_ecog(text: str) -> tuple[set[int], str] | None:
    """Which ECOG grades a performance-status criterion allows (Karnofsky converted to ECOG)."""
    norm = _normalise(text)
    for words, symbol in ((r"(?:greater than or equal to|no less than|not less than|at least)", ">="),
                          (r"(?:less than or equal to|no more than|not more than|at most)", "<="),
                          (r"(?:below|under|less than|lower than)", "<"), (r"(?:above|over|more than|greater than|higher than)", ">")):
        norm = re.sub(rf"\b{words}\s*(?=\d)", symbol, norm, flags=re.I)
    # A bound written after the number: "ECOG 2 or more", "Karnofsky 60 or less".
    norm = re.sub(r"\b(\d{1,3})\s*%?\s*or\s+(?:more|higher|greater|above)\b", r">=\1", norm, flags=re.I)
    norm = re.sub(r"\b(\d{1,3})\s*%?\s*or\s+(?:less|lower|fewer|below)\b", r"<=\1", norm, flags=re.I)
    # A score is 20-100 and not an age ("Lansky (for patients <= 12 years of age)"): anything else is not a parse.
    karnofsky = next((m for m in re.finditer(rf"{_KARNOFSKY_NAMES}[^0-9<>]{{0,30}}(>=|>|<=|<|at least|of)?"
                                             r"\s*(\d{2,3})(?!\s*(?:years?|yrs?|months?|y\b))", norm, re.I)
                      if 20 <= int(m.group(2)) <= 100), None)
    if karnofsky:
        op, score = (karnofsky.group(1) or ">=").lower(), int(karnofsky.group(2))
        grades = {g for g in range(6) if _karnofsky_ok(g, op, score)}
        return grades, f"Karnofsky {op} {score}"
    for word, digit in _PS_NUMBER_WORDS:
        norm = re.sub(rf"\b{word}\b", digit, norm, flags=re.I)
    norm = re.sub(r"\b(?:less than or equal to|at most|no (?:more|greater) than|up to)\s*(?=\d)", "<=", norm, flags=re.I)
    norm = re.sub(r"\b(?:greater than or equal to|at least)\s*(?=\d)", ">=", norm, flags=re.I)
    # "WHO" is the scale only in capitals and before its own words or a grade: not "who had 2", "WHO grade 2".
    m = re.search(rf"(?:{_ECOG_NAMES}|(?-i:WHO)(?=\W*(?:performance|PS\b|ECOG|[<>=]|[0-5](?!\d))))"
                  r"[^0-9<>]{0,40}(>=|>|<=|<|of|:)?\s*([0-5])(?![\d.])"
                  r"(?:\s*(?:-|to|~|or|/|,)\s*([0-5]))?(?:\s*(?:,|or)\s*([0-5]))?", norm, re.I)
    if not m:
        return None
    first = int(m.group(2))
    last = int(m.group(4) or m.group(3) or first)
    return grades_allowed((m.group(1) or "").lower(), first, last, range(6)), m.group(0).strip()


def _karnofsky_ok(grade: int, op: str, score: int) -> bool:
    lowest = KARNOFSKY_LOWEST[grade]
    highest = {0: 100, 1: 80, 2: 60, 3: 40, 4: 20, 5: 0}[grade]
    if op in (">=", "at least", "of"):
        return lowest >= score or karnofsky_to_ecog(score) >= grade and highest >= score
    if op == ">":
        return highest > score
    if op == "<=":
        return lowest <= score
    return lowest < score


def _performance_finding(text: str, facts: PatientFacts) -> tuple[_Finding | None, list[tuple[int, int]]]:
    mention = _PERFORMANCE.search(text)
    if not mention:
        return None, []
    allowed = _allowed_ecog(text)
    if allowed is None:
        return None, []
    grades, written = allowed
    end = min(len(text), mention.end() + 60)
    # The grades follow the scale's name; a condition named after "or" / "," is another item ("ECOG >= 2 or heart
    # failure") and is left for the other rules.
    other = next((m.start() for m in re.finditer(r"\bor\b|[,;]", text[mention.end():end])
                  if find_concepts(text[mention.end() + m.end():end])), None)
    spans = [(mention.start(), end if other is None else mention.end() + other)]
    if facts.ecog is None:
        return _Finding("performance", None, f"The trial asks for {written}; the patient's activity level "
                        "(ECOG performance status) is not recorded.", open_question=True), spans
    ok = facts.ecog in grades
    return _Finding("performance", ok, f"ECOG performance status {facts.ecog} is "
                    f"{'within' if ok else 'outside'} what the trial allows ({written}).",
                    facts.evidence(facts.ecog_evidence)), spans


_HEALTHY = STATE_CUES.compile("healthy")


def _healthy_finding(text: str, facts: PatientFacts) -> tuple[_Finding | None, list[tuple[int, int]]]:
    m = _HEALTHY.search(text)
    if not m or assertion_at(text, m.start(), m.end()) != "affirmed":
        return None, []
    spans = [h.span() for h in _HEALTHY.finditer(text) if assertion_at(text, h.start(), h.end()) == "affirmed"]
    if facts.healthy_volunteer is None:
        return _Finding("healthy", None, "The trial wants healthy volunteers; it is not known whether the patient is one.",
                        open_question=True), spans
    word = "is" if facts.healthy_volunteer else "is not"
    return _Finding("healthy", facts.healthy_volunteer,
                    f"The trial wants healthy volunteers and the patient {word} one."), spans


# Consent, willingness and following the study plan: cue words in data/eligibility/consent_cues.csv, by role.
CONSENT_CUES = cues.CueFile(GENERIC_WORDS_CSV.parent / "consent_cues.csv",
                            ("consent", "consent_only", "refusal", "follow_plan", "time_word", "time_filler"))


_CONSENT_WORDS = CONSENT_CUES.compile("consent")
_REFUSAL = CONSENT_CUES.compile("refusal")
# "within 4 weeks before signing the informed consent": consent only marks a point in time.
_CONSENT_AS_TIME = re.compile(
    rf"{CONSENT_CUES.words('time_word')}\s+(?:{CONSENT_CUES.words('time_filler')}\s+){{0,4}}$", re.I)
_FOLLOW_PLAN = CONSENT_CUES.compile("follow_plan")
_CONSENT_ONLY = CONSENT_CUES.compile("consent_only")


_TEAM_CHECKS = ("This line is about consenting, being willing or being able to take part; the trial team checks it "
                "with you at the screening visit, so it does not count against you here.")


def _consent_finding(text: str, facts: PatientFacts, concepts: list[ConceptMatch],
                     kind: CriterionKind) -> _Finding | None:
    """A finding when the criterion is about consenting or following the study plan (and names no condition).

    Never a verdict against the patient: whether someone consents, is willing or is able to is settled with the
    trial team, and the wording of such lines ("impossibility to obtain consent", "non-consenting subjects")
    turns a refusal into what reads like a fact about the patient."""
    found = _consent_reading(text, facts, concepts)
    if found is not None and found.truth is not None and found.truth == (kind == "exclusion"):
        return _Finding("consent", None, _TEAM_CHECKS, open_question=True)
    return found


def _consent_reading(text: str, facts: PatientFacts, concepts: list[ConceptMatch]) -> _Finding | None:
    plain = _PARENS.sub(lambda p: " " * len(p.group(0)), text)
    m = _CONSENT_WORDS.search(plain)
    if not m or concepts or _CONSENT_AS_TIME.search(plain[: m.start()]):
        return None  # no consent wording, a named condition, or consent only marks a point in time
    refusal = bool(_REFUSAL.search(plain[: m.end() + 1]))
    if refusal and re.match(r"^(?:[^:;.]{0,40}:\s*)?\W*(?:absence of|no|without|free of|lack of)\b[^.;]*\b(?:condition|factor|problem|reason)s?\b",
                            plain, re.I):
        refusal = False  # "Absence of any condition hampering compliance": the double negative asks for compliance
    asks_to_comply = bool(_FOLLOW_PLAN.search(plain))
    if facts.from_note and asks_to_comply and not facts.comply:
        return _Finding("consent", None, "The note does not say whether the patient will follow the study plan and "
                        "attend the visits.")
    if not facts.consent and not (asks_to_comply and facts.comply and not _CONSENT_ONLY.search(plain)):
        return _Finding("consent", None, "The note does not say whether the patient will consent and follow the study plan.")
    if facts.from_note:
        return _Finding("consent", not refusal, "The note says the patient will give consent and follow the "
                        "study plan.", facts.evidence(facts.consent_evidence))
    # A profile: whether someone consents, is willing or is able to is settled with the trial team.
    return _Finding("consent", None, _TEAM_CHECKS, open_question=True)


# --- Measurements --------------------------------------------------------------------------------


def _compare(value: float, op: str, limit: float) -> bool:
    """Whether the value meets the limit; a comparison not listed ("=") asks for the same number."""
    return (comparison(op) or math.isclose)(value, limit)


# What a cut-off defines: "Renal failure (GFR < 30)", "CKD with eGFR < 30", "renal impairment, defined as ...".
_DEFINITION_CUE = re.compile(r"\b(?:defined|characteri[sz]ed|evidenced|measured|confirmed)\s+(?:as|by)\b|"
                             r"\bwith\b|\bi\.?e\.?\b|:", re.I)


def _defined_by(text: str, start: int) -> tuple[int, int]:
    """The condition a cut-off defines, as a span to leave to the cut-off, with the bracket the cut-off is in
    (empty when the cut-off stands on its own): with the patient's value known, the number decides it."""
    before = text[:start]
    depth, opening = 0, -1
    for i in range(len(before) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(before[i], 0)
        if depth < 0:
            opening = i
            break
    cue = None if opening >= 0 else next(
        (m for m in reversed(list(_DEFINITION_CUE.finditer(before))) if ";" not in before[m.end():]), None)
    anchor = opening if opening >= 0 else cue.start() if cue is not None else -1
    if anchor < 0:
        return (start, start)
    # "(CKD)" is not a clause, and the comma before "defined as" ends the defined words
    outside = _PARENS.sub(lambda m: " " * len(m.group(0)), before[:anchor]).rstrip(" ,")
    head = max(outside.rfind(c) for c in ",;:(")
    head = max(head, *(m.end() for m in re.finditer(r"\b(?:or|and)\b", outside, re.I)), 0)
    close = text.find(")", start) if opening >= 0 else -1
    return (head + 1 if head else 0, close + 1 if close > 0 else start)


_OR_BEFORE = re.compile(r"\bor\s+(?:\w+\s+){0,2}$", re.I)
_OR_AFTER = re.compile(r"^\s*(?:\([^()]*\)\s*)?,?\s*(?:and\s*/\s*)?or\b", re.I)


def _measure_findings(text: str, facts: PatientFacts,
                      kind: CriterionKind) -> tuple[list[_Finding], list[tuple[int, int]]]:
    norm = _normalise(text)
    findings: list[_Finding] = []
    spans: list[tuple[int, int]] = []
    for cut in limits_in(norm):
        role = limit_role(norm, cut.name_start, cut.span[1], cut.span[1])
        if role and role != "negated":
            if role not in UNREAD_ROLES:
                spans.append(cut.span)  # a condition for another limit or a change, not the patient's level
            continue
        if cut.sex is not None and facts.sex is not None and cut.sex != facts.sex:
            continue  # a limit for the other sex ("≥ 11.5 g/dL for women", a man): the line's rest decides
        truth, reason, evidence = judge_limit(cut, facts, kind)
        if role == "negated" and truth is not None:  # "No severe anemia (Hb < 10 g/dL)" asks the opposite
            truth = not truth
            reason = f'The line asks for the opposite of "{cut.written}". {reason}'
        clause = norm[: cut.name_start].split(";")[-1]
        if truth is False and kind == "inclusion" and (
                _OR_BEFORE.search(clause) or _OR_AFTER.match(norm[cut.span[1]:])):
            truth, reason = None, f"{reason} The line offers another way to qualify instead, which is not known here."
        # An unknown value is an open question unless the line also names a condition a complete note would
        # mention ("Impaired renal function (creatinine clearance < 20)"): then its silence settles it.
        names_one = bool(find_concepts(_PARENS.sub(" ", norm)))
        if truth is None and names_one and any(p.start() <= cut.name_start < p.end() for p in _PARENS.finditer(norm)):
            continue  # a bracketed definition of a condition named outside the brackets, which decides
        findings.append(_Finding("measure", truth, reason, evidence, open_question=truth is None and not names_one))
        spans.append(cut.span)
        if truth is not None:
            spans.append(_defined_by(norm, cut.name_start))
    return findings, spans


# --- Named conditions, treatments and results -----------------------------------------------------


@dataclass(frozen=True)
class _Status:
    state: str  # "affirmed", "negated", "absent"
    evidence: tuple[int, ...]
    where: str = ""  # the note's wording of an affirmed mention
    instead: str = ""  # the concept whose presence rules this one out (type 2 diabetes rules out type 1)


@lru_cache(maxsize=8192)
def _concept_status(
    key: str, facts: PatientFacts, excepted: frozenset[str] = frozenset(), follow_excludes: bool = True
) -> _Status:
    """Is this concept (or a narrower one) affirmed for the patient, negated, or not mentioned?

    Mentions of ``excepted`` concepts (and narrower ones) do not count: "cancer, except basal cell
    carcinoma" is not met by a basal cell carcinoma.
    """
    affirmed: list[int] = []
    broader_affirmed = False
    negated: list[int] = []
    wording = ""
    for sentence in facts.sentences:
        if is_boilerplate(sentence.text):
            continue
        for match in find_concepts(sentence.text):
            if match.key in excepted or ancestors(match.key) & excepted:
                continue
            if match.key == "cancer" and any("cancer" in ancestors(e) for e in excepted):
                continue  # "cancer other than NSCLC": a bare "metastases" is the excepted cancer's own
            narrower_or_same = match.key == key or key in ancestors(match.key)
            broader = match.key in ancestors(key)
            if not (narrower_or_same or broader):
                continue
            state = "negated" if match.absent else assertion_at(sentence.text, match.start, match.end)
            if state == "affirmed" and narrower_or_same:
                affirmed.append(sentence.id)
                wording = wording or sentence.text[match.start : match.end]
            elif state == "affirmed" and broader:
                broader_affirmed = True
            elif state == "negated" and (broader or match.key == key):
                # "no heart disease" rules out a heart attack; "no heart attack" does not rule out all heart disease.
                negated.append(sentence.id)
    if affirmed:
        return _Status("affirmed", tuple(affirmed), wording)
    if negated and not broader_affirmed:
        return _Status("negated", tuple(negated))
    for other in concept_index()[key].excludes if follow_excludes else ():
        status = _concept_status(other, facts, excepted, follow_excludes=False)
        if status.state == "affirmed":
            return _Status("negated", status.evidence, status.where, instead=concept_index()[other].name)
    return _Status("absent", ())


# Criterion structure: exceptions, "any one of" lists, "other" mentions (data/eligibility/structure_cues.csv).
STRUCTURE_CUES = cues.CueFile(GENERIC_WORDS_CSV.parent / "structure_cues.csv",
                              ("exception", "disjunctive", "other"))


# "no other cancers", "a second primary tumour": a mention of a further one besides the patient's own.
_OTHER_BEFORE = re.compile(rf"{STRUCTURE_CUES.words('other', end=False)}\s+(?:\w+\s+){{0,2}}$", re.I)


def _other_cancer_status(facts: PatientFacts, excepted: frozenset[str]) -> _Status:
    """"Other malignancy", "second primary cancer": a cancer besides the one the patient is treated for.

    The note shows one only when it affirms two different kinds of cancer; "no other cancers" negates it.
    """
    kinds: dict[str, list[int]] = {}
    negated: list[int] = []
    for sentence in facts.sentences:
        if is_boilerplate(sentence.text):
            continue
        for match in find_concepts(sentence.text):
            if match.key in excepted or not (match.key == "cancer" or "cancer" in ancestors(match.key)):
                continue
            state = "negated" if match.absent else assertion_at(sentence.text, match.start, match.end)
            before = sentence.text[max(0, match.start - 30) : match.start]
            if state == "negated" and _OTHER_BEFORE.search(before):
                negated.append(sentence.id)
            elif state == "affirmed" and match.key != "cancer":
                kinds.setdefault(match.key, []).append(sentence.id)
    if len(kinds) >= 2:
        return _Status("affirmed", tuple(i for ids in kinds.values() for i in ids), "more than one kind of cancer")
    if negated:
        return _Status("negated", tuple(negated))
    return _Status("absent", ())


# The whitespace before a separator is taken from the start of its run only (or none where a run ends), so a long
# run of spaces (a masked exception) is not rescanned from every position in it.
_UNIT_SPLIT = re.compile(
    r"(?:(?<!\s)\s*|(?<=\s)(?=\S))(?:,|;|(?<!\d)/|/(?!\d)|\band/or\b|\bor\b|\bnor\b|\band\b|\bsuch as\b|\bincluding\b|\be\.g\.|\bi\.e\.|\betc\.?)\s*",
    re.I,
)
# A piece that starts like this qualifies the piece before it ("..., for all trauma patients").
_QUALIFYING_PIECE = re.compile(r"^(for|in|at|by|with|of|after|before|during|within|due|from|to|when|while|which|that|"
                               r"who|requiring|as)\b", re.I)
_STAGE_END = re.compile(r"\b(?:locally advanced|advanced|metastatic|recurrent|unresectable|inoperable|refractory|relapsed|"
                        r"early|early-stage|localized|localised|limited|extensive|resectable|operable|newly diagnosed)\s*$",
                        re.I)
_DISJUNCTIVE = STRUCTURE_CUES.compile("disjunctive")
# An exception runs to the end of its clause ("other than basal cell skin cancer").
_EXCEPTION = re.compile(rf"{STRUCTURE_CUES.words('exception')}[^;]*", re.I)
_NEGATED_REQUIREMENT = re.compile(
    r"^(?:[A-Za-z][\w /&-]{0,40}:\s*)?"  # a section label ("Cardiovascular: No heart failure")
    r"\W*(?:(?:patients?|subjects?|participants?|individuals?)\s+(?:who\s+)?)?(?:must\s+)?"
    r"(no\b|none\b|not\b|never\b|without|absence of|free of|lack of|non[- ]|negative(?: for)?|"
    r"(?:has|have|had|did|does|do|must|should|is|are)(?: not|n't)(?: (?:been|be|be(?:en)? diagnosed with|had|have|"
    r"received|receive|undergone|experienced|suffered|used|use|taken|take|smoked|smoke|pregnant|breast-?feeding))?"
    r"(?=\s|$)(?!\s+(?:changed|change|stopped|completed|started|met)\b))",
    re.I,
)


@dataclass
class _Unit:
    text: str
    start: int
    concepts: list[ConceptMatch]
    leftover: list[str]
    # Word groups of which one is enough ("allergy to penicillin or cephalosporins": either drug), each
    # group's content words; a record that says one whole group leaves none of them unexplained.
    alternatives: tuple[tuple[str, ...], ...] = ()

    def settle_alternatives(self) -> None:
        """Drop every alternative's words from the leftover once one alternative is wholly said."""
        if any(group and not set(group) & set(self.leftover) for group in self.alternatives):
            chosen = {w for group in self.alternatives for w in group}
            self.leftover = [w for w in self.leftover if w not in chosen]


def _literal_status(words: list[str], facts: PatientFacts, minimum: int) -> _Status | None:
    """Whether all these words appear together in one note sentence, as a plain-text match."""
    words = [w for w in words if w not in _QUALIFIERS]
    if len(words) < minimum or not words:
        return None
    stems = {_stem(w) for w in words}
    for sentence in facts.sentences:
        if is_boilerplate(sentence.text):
            continue
        sentence_words = _content_words(sentence.text)
        if not stems <= {_stem(w) for w in sentence_words}:
            continue
        lowered = sentence.text.lower()
        positions = [lowered.find(w) for w in sentence_words if _stem(w) in stems]
        states = {assertion_at(sentence.text, p) for p in positions if p >= 0} or {"affirmed"}
        # "swallows tablets without difficulty": a negation on any of the words negates the whole phrase.
        # A mention in the family history says nothing about the patient.
        state = "negated" if "negated" in states else "absent" if "family" in states else "affirmed"
        return _Status(state, (sentence.id,), " ".join(words))
    return None


def _unexplained(words: list[str], facts: PatientFacts, sentence_ids: tuple[int, ...]) -> list[str]:
    """The words of a list item that the note sentences showing its concept do not also say.

    Time limits and numbers are never taken as said: "within 3 months" needs a date, not the word "months".
    """
    said = {_stem(w) for s in facts.sentences if s.id in sentence_ids for w in _content_words(s.text)}
    shown = " ".join(s.text for s in facts.sentences if s.id in sentence_ids)
    # Stage words imply each other: metastatic (stage IV) cancer is advanced cancer.
    if re.search(r"\bmetasta\w*|\bstage (?:IV|4)\b", shown, re.I):
        said |= {"advanced", "metastatic"}
    if re.search(r"\bstage (?:III|3)[ABC]?\b", shown, re.I):
        said |= {"advanced"}
    return [w for w in words if w in _TIME or _stem(w) not in said]


# Subtypes the vocabulary spells as the cancer itself: the word in a criterion, and what shows it in a record
# (an adenocarcinoma is non-squamous).
_HISTOLOGY = (("non-squamous", re.compile(r"\bnon-?\s?squamous\b", re.I),
               re.compile(r"\bnon-?\s?squamous\b|\badenocarcinoma", re.I)),
              ("squamous", re.compile(r"(?<!non)(?<!non-)(?<!non )\bsquamous\b", re.I),
               re.compile(r"(?<!non)(?<!non-)(?<!non )\bsquamous\b", re.I)),
              ("adenocarcinoma", re.compile(r"\badenocarcinoma", re.I), re.compile(r"\badenocarcinoma", re.I)))
_TIMING = "(timing)"
_ADJUVANT = "(adjuvant)"
_ADVANCED_SETTING = re.compile(r"\b(?:for|in)\s+(?:the\s+)?(?:locally\s+)?(?:advanced|metastatic|recurrent|unresectable)"
                               r"(?:/metastatic)?\b|\b(?:advanced|metastatic) (?:disease )?setting\b", re.I)
_EARLY_SETTING = re.compile(r"\b(?:neo-?)?adjuvant\b|\bperioperative\b|\bcurative[- ]intent\b", re.I)
_COUNT = r"(?P<n>\d{1,3}(?:\.\d+)?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a|an|several|a few)"
_TIME_UNIT = r"(?P<u>hours?|hrs?|days?|weeks?|wks?|months?|mos?|years?|yrs?)"
_WINDOW_WITHIN = re.compile(r"\b(?:within|in|during|over)\s+(?:the\s+)?(?:(?:last|past|previous|preceding|prior)\s+)?"
                            + _COUNT + r"\s*" + _TIME_UNIT
                            + r"|\b(?:less than|fewer than|<)\s*" + _COUNT.replace("?P<n>", "?P<n2>") + r"\s*"
                            + _TIME_UNIT.replace("?P<u>", "?P<u2>") + r"(?:\s+(?:from|before|prior to|of)\b|\s*(?:[.;,)]|$))",
                            re.I)
_WINDOW_MINIMUM = re.compile(r"(?:\b(?:(?:more|longer|greater) than or equal to|more than|longer than|at least|over|"
                             r"greater than)\s*|(?:>=?|≥)\s*|\bfor\s+(?:at least\s+)?"
                             r"(?:more than\s+)?)" + _COUNT + r"\s*" + _TIME_UNIT, re.I)
_NOTE_AGO = (
    re.compile(_COUNT + r"\s*" + _TIME_UNIT + r"\s+(?:ago|earlier|before (?:admission|presentation|this visit|today))\b",
               re.I),
    re.compile(r"\b(?:for|over)\s+(?:the\s+)?(?:(?:past|last)\s+)?" + _COUNT + r"\s*" + _TIME_UNIT, re.I),
)


def _span_weeks(m: re.Match[str]) -> float | None:
    groups = m.groupdict()
    raw = (groups.get("n") or groups.get("n2") or "").lower()
    if raw in ("several", "a few"):
        return None
    return in_weeks(raw, groups.get("u") or groups.get("u2") or "")


def _has_window(text: str) -> bool:
    """Whether a text sets a time limit ("within 6 months", "for at least 3 months"); ages do not count."""
    for pattern in (_WINDOW_WITHIN, _WINDOW_MINIMUM):
        for m in pattern.finditer(text):
            after = text[m.end() : m.end() + 14]
            before = text[max(0, m.start() - 12) : m.start()]
            if not re.match(r"\s*(?:of age|old|of life|of (?:the )?age)\b", after, re.I) and not re.search(
                    r"\bage[ds]?\W*$", before, re.I):
                return True
    return False


def _time_check(piece: str, facts: PatientFacts, sentence_ids: tuple[int, ...], keys: frozenset[str]) -> bool | None:
    """Whether the note's timing of a condition fits the criterion's time limit.

    "within the previous 3 months" is met by "two weeks ago" and not by "two years ago"; "fever for more
    than one week" is not met by "fever for 2 days".  None when either side gives no usable time.
    """
    within = _WINDOW_WITHIN.search(piece)
    minimum = None if within else _WINDOW_MINIMUM.search(piece)
    window = within or minimum
    if window is None:
        return None
    # The limit must be written next to the condition it times, not in a bracket about something else.
    named = [c for c in find_concepts(piece) if c.key in keys or keys & ancestors(c.key)]
    near = [c for c in named
            if not re.search(r"[()\[\]]", piece[min(c.end, window.start()):max(c.start, window.end())])
            and (window.start() - c.end if window.start() >= c.end else c.start - window.end()) <= 40]
    if not near:
        return None
    limit = _span_weeks(window)
    if limit is None:
        return None
    for sentence in facts.sentences:
        if sentence.id not in sentence_ids:
            continue
        # The time must be said of this condition: next to its mention, and the only time in the sentence.
        # "for 2 days" is a duration; "two weeks ago" only says when it began, which a minimum duration cannot use.
        since_event = within or re.match(r"\s*(?:prior|before|ago|since|earlier)\b", piece[window.end():], re.I)
        patterns = _NOTE_AGO if since_event else _NOTE_AGO[1:]
        times = [m for pattern in patterns for m in pattern.finditer(sentence.text)]
        mentions = [c for c in find_concepts(sentence.text) if c.key in keys or keys & ancestors(c.key)]
        if len(times) != 1 or not mentions:
            continue
        seen = times[0]
        if min(abs(seen.start() - c.end) if seen.start() >= c.end else abs(c.start - seen.end()) for c in mentions) > 60:
            continue
        elapsed = _span_weeks(seen)
        if elapsed is None:
            continue
        return elapsed <= limit if within else elapsed >= limit
    return None


# A reaction and the word that opens what it is to: "hypersensitivity to", "allergic reaction with"
# (data/eligibility/reaction_cues.csv).
REACTION_CUES = cues.CueFile(GENERIC_WORDS_CSV.parent / "reaction_cues.csv", ("reaction", "object"))
_REACTION_TO = re.compile(
    REACTION_CUES.words("reaction") + r"\s+(?:\w+\s+){0,2}?" + REACTION_CUES.words("object"), re.I
)


# The items of what a reaction is to: "penicillin, amoxicillin and/or cephalosporins".
_OBJECT_LIST = re.compile(r",|;|/|\b(?:and/or|or|nor)\b", re.I)


def _unexplained_words(piece: str, start: int, inside: list[ConceptMatch],
                       ignore: frozenset[str]) -> list[str]:
    """The content words of a piece (starting at ``start``) outside the concepts named in it."""
    leftover = piece
    for c in sorted(inside, key=lambda c: -c.start):
        leftover = leftover[: c.start - start] + " " + leftover[c.end - start :]
    return [w for w in _content_words(leftover)
            if w not in ("no", "not", "non", "never", "without") and w not in ignore]


def _split_units(plain: str, concepts: list[ConceptMatch], ignore: frozenset[str]) -> list[_Unit]:
    """Cut a criterion into list items; a piece that only qualifies the previous one stays with it."""
    pieces: list[tuple[int, str]] = []
    position = 0
    reaction = _REACTION_TO.search(plain)
    if reaction:
        # "Hypersensitivity to Taxol or Taxotere": everything after "to" is what the reaction is to, so it
        # stays one item with the reaction (a clause after ";" starts a new one).
        end = plain.find(";", reaction.end())
        end = len(plain) if end < 0 else end
        head_units = _split_units(plain[: reaction.start()], [c for c in concepts if c.start < reaction.start()],
                                  ignore) if plain[: reaction.start()].strip() else []
        inside = [c for c in concepts if reaction.start() <= c.start < end]
        piece = plain[reaction.start() : end]
        # Within the object list any one named thing is enough, so keep the reaction and the first drug named.
        words = _unexplained_words(piece, reaction.start(), inside, ignore)
        allergy = [c for c in inside if c.key == "allergy"]
        objects = tuple(group for part in _OBJECT_LIST.split(plain[reaction.end() : end])
                        if (group := tuple(w for w in _content_words(part) if w in words)))
        reaction_units = [_Unit(piece, reaction.start(), allergy + [c] if c not in allergy else [c], words,
                                objects if len(objects) > 1 else ())
                          for c in [c for c in inside if c.key != "allergy"] or allergy]
        tail = _split_units(plain[end:], [c for c in concepts if c.start >= end], ignore) if end < len(plain) else []
        return head_units + reaction_units + tail
    for piece in _UNIT_SPLIT.split(plain):
        start = plain.find(piece, position) if piece else position
        position = start + len(piece)
        if not piece.strip():
            continue
        if pieces and (_QUALIFYING_PIECE.match(piece.strip()) or _STAGE_END.search(pieces[-1][1])):
            # "locally advanced or metastatic NSCLC": a stage adjective joined to the next piece is one phrase.
            first_start = pieces[-1][0]
            pieces[-1] = (first_start, plain[first_start : start + len(piece)])
        else:
            pieces.append((start, piece))
    units = []
    for start, piece in pieces:
        inside = [c for c in concepts if start <= c.start < start + len(piece)]
        units.append(_Unit(piece, start, inside, _unexplained_words(piece, start, inside, ignore)))
    return units


_MODIFIER_END = re.compile(r"\b(?:of|with|in|for|to|by|from|on|at|as|than|and|or|nor|the|a|an|any|no|not|"
                           r"without|who|which|that|is|are|has|have|had)\b|[,;:()/.]", re.I)


def _concept_finding(
    text: str, kind: CriterionKind, facts: PatientFacts, consumed: list[tuple[int, int]], ignore: frozenset[str]
) -> tuple[_Finding | None, list[str]]:
    """Judge the named things in the criterion; returns the finding and the words nothing explained."""
    norm = _normalise(text)
    # Clauses that carve out exceptions ("other than basal cell skin cancer") do not count against anyone.
    # Listed in the order written, so a reason names them the same way in every process.
    excepted_in_order = list(dict.fromkeys(c.key for m in _EXCEPTION.finditer(norm) for c in find_concepts(m.group(0))))
    excepted = frozenset(excepted_in_order)
    norm = _EXCEPTION.sub(lambda m: " " * len(m.group(0)), norm)
    masked = list(norm)
    for start, end in consumed:
        for i in range(max(0, start), min(len(masked), end)):
            masked[i] = " "
    masked_text = "".join(masked)
    plain = _PARENS.sub(lambda m: " " * len(m.group(0)), masked_text)
    negation = _NEGATED_REQUIREMENT.match(plain)
    requirement_negated = negation is not None and not any(
        (c.absent and c.start <= len(plain) - len(plain.lstrip()) + 4)
        # "Non-small cell lung cancer": the "non-" belongs to a name, not a negation.
        or c.start <= negation.start(1) < c.end
        for c in find_concepts(masked_text)
    ) and not (negation.group(1).lower() in ("non-", "non ")
               and not any(c.start == negation.end(1) for c in find_concepts(masked_text)))
    # ("Non-squamous NSCLC": a "non-" on a word that names nothing qualifies what follows; it negates nothing.)
    family = bool(re.match(r"^\W*(?:a\s+)?(?:positive\s+)?family history\b", plain, re.I))

    concepts = [c for c in find_concepts(masked_text) if plain[c.start : c.end].strip()]
    if not concepts and find_concepts(masked_text):
        # Named only inside brackets: use those.
        concepts = find_concepts(masked_text)
        plain = masked_text
    units = _split_units(plain, concepts, ignore)
    leftover_all = [w for u in units for w in u.leftover]

    if family:
        # The criterion is about relatives, so only the note's family history can answer it.
        hits = [s.id for s in facts.sentences if re.search(r"\bfamily history\b|\b(mother|father|sibling|brother|sister)\b",
                                                           s.text, re.I) and not is_boilerplate(s.text)]
        if not concepts or not hits:
            return _Finding("family", None, "The record says nothing about this in the family history.",
                            open_question=True), leftover_all
        return _Finding("family", None, "The family history is mentioned; a doctor should check whether it matches.",
                        facts.evidence(hits), discuss=True, open_question=True), leftover_all

    if not concepts:
        attempts = [(leftover_all, 1 if kind == "inclusion" else 2)]
        if kind == "inclusion" and re.search(r"\beither\b|\bor\b", plain, re.I) and len(units) > 1:
            # "CT scan or ultrasound of the abdomen": one alternative found word for word is enough.
            attempts += [(unit.leftover, 2) for unit in units]
        for words, minimum in attempts:
            found = _literal_status(words, facts, minimum)
            if found is not None and found.state == "affirmed" and not any(w in _QUALIFIERS for w in words):
                return (_Finding("literal", not requirement_negated, f"{facts.source} mentions {found.where}.",
                                 facts.evidence(found.evidence)), [])
        return None, leftover_all

    index = concept_index()
    # "Severe renal or hepatic insufficiency": the adjective covers every item of the list.
    # Only an adjective before the first named thing is shared; one inside a later item is that item's own.
    first_named = min((c.start for c in concepts), default=len(plain))
    shared_severity = [w for w in _content_words(plain[:first_named])
                       if w in _SEVERITY or w in ("concomitant", "concurrent", "current", "ongoing", "recent")]
    # The words right before it that name a kind ("Burkitt lymphoma and leukemia", "Mixed small-cell and NSCLC
    # histology", "drug-induced ILD or ... steroids") qualify every item of the list too.
    kind_words = _MODIFIER_END.split(plain[:first_named])[-1]
    shared_severity += [w for w in _content_words(kind_words)
                        if w != _NUMBER_TOKEN and w not in shared_severity]
    results: list[tuple[_Unit, _Status, str]] = []
    whole_window = _has_window(plain)
    advanced_setting = _ADVANCED_SETTING.search(plain) is not None
    for unit in units:
        if not unit.concepts:
            # A list item with no known concept can still be found word for word in the note.
            literal = _literal_status(unit.leftover, facts, minimum=2)
            if literal is not None and literal.state in ("affirmed", "negated") and all(
                    w not in _QUALIFIERS for w in unit.leftover):
                unit.leftover = []
                results.append((unit, literal, literal.where))
            continue
        statuses = []
        other_cancer: list[ConceptMatch] = []
        for c in unit.concepts:
            before_c = plain[max(0, c.start - 30) : c.start]
            if (_OTHER_BEFORE.search(before_c) and (c.key == "cancer" or "cancer" in ancestors(c.key))) or (
                    c.key == "cancer" and re.search(r"\b(?:previous|prior|past)\s+(?:\w+\s+)?$", before_c, re.I)):
                status = _other_cancer_status(facts, excepted)
                other_cancer.append(c)
            else:
                status = _concept_status(c.key, facts, excepted)
            if status.state == "affirmed" and advanced_setting and (
                    c.key == "anticancer_therapy" or "anticancer_therapy" in ancestors(c.key)):
                # Adjuvant or neoadjuvant treatment is given around surgery, never for advanced disease.
                in_setting = [i for i in status.evidence
                              if not _EARLY_SETTING.search(next(x.text for x in facts.sentences if x.id == i))]
                if not in_setting:
                    status = _Status("negated", status.evidence, status.where, instead=_ADJUVANT)
            if c.absent:  # the criterion itself says "non-smoker": what counts as met flips
                status = _Status({"affirmed": "negated", "negated": "affirmed"}.get(status.state, status.state),
                                 status.evidence, status.where)
            statuses.append((c, status))
        states = [st.state for _, st in statuses]
        # Within one list item every named thing is needed ("COPD smoker" needs both).
        if "negated" in states:
            combined = next(st for _, st in statuses if st.state == "negated")
        elif all(state == "affirmed" for state in states):
            combined = _Status("affirmed", tuple(i for _, st in statuses for i in st.evidence), statuses[0][1].where)
        else:
            combined = _Status("absent", ())
        unit.leftover += [w for w in shared_severity if w not in unit.leftover]
        if "metastatic" not in unit.leftover and any(re.search(r"metasta", plain[c.start:c.end], re.I)
                                                     for c in unit.concepts):
            # "Metastatic" names a cancer that has spread: a cancer on record does not say that it has.
            unit.leftover.append("metastatic")
        if combined.state == "negated" and not any(c.absent for c in unit.concepts):
            # The record says there is no X at all, so no narrower "severe X" or "X within 6 months" either.
            unit.leftover = []
        if unit.leftover and combined.state == "affirmed":
            unit.leftover = _unexplained(unit.leftover, facts, combined.evidence)
            unit.settle_alternatives()
        if combined.state == "affirmed":
            # A subtype the vocabulary spells as the cancer itself ("squamous NSCLC" is NSCLC): the record must say it.
            named = " ".join(plain[c.start:c.end] for c in unit.concepts)
            record = " ".join(s.text for s in facts.sentences if s.id in combined.evidence)
            unit.leftover += [word for word, asked, said in _HISTOLOGY if asked.search(named) and not said.search(record)]
            # A drug named by its name ("prior T-DM1") is not shown by other drugs of its class
            # ("trastuzumab").
            unit.leftover += [plain[c.start:c.end] for c in unit.concepts
                              if other_drug_of_class(c.key, plain[c.start:c.end], record)]
        if combined.state == "affirmed" and (any(w in _TIME for w in unit.leftover) or whole_window):
            keys = frozenset(c.key for c, _ in statuses)
            timing = _time_check(unit.text if _has_window(unit.text) else plain, facts, combined.evidence, keys)
            if timing is True:
                unit.leftover = [w for w in unit.leftover if w not in _TIME]
            elif timing is False:
                combined = _Status("negated", combined.evidence, instead=_TIMING)
            elif whole_window and not any(w in _TIME for w in unit.leftover):
                # A time limit anywhere in the criterion covers everything it lists.
                unit.leftover = unit.leftover + ["within"]
        joiner = " and " if combined.state == "affirmed" else " or "
        # Name only what the verdict rests on, so the reason never says "does not mention" something the note shows.
        shown = [(c, st) for c, st in statuses if st.state == combined.state] if combined.state != "affirmed" else statuses
        label = joiner.join(dict.fromkeys(("no " if c.absent else "") + ("other cancer" if c in other_cancer
                                                                         else index[c.key].name)
                                          for c, _ in shown or statuses))
        results.append((unit, combined, label))

    head_leftover = [w for u in units if not any(u is r[0] for r in results) for w in u.leftover]
    leftovers = [w for u, _, _ in results for w in u.leftover] + head_leftover
    disjunctive = kind == "exclusion" or bool(_DISJUNCTIVE.search(plain))
    clean = [r for r in results if r[1].state == "affirmed" and not r[0].leftover]
    qualified = [r for r in results if r[1].state == "affirmed" and r[0].leftover]
    negated = [r for r in results if r[1].state == "negated"]
    absent = [r for r in results if r[1].state == "absent"]

    def names(rows: list[tuple[_Unit, _Status, str]]) -> str:
        return ", ".join(dict.fromkeys(n for _, _, n in rows))

    def not_there(rows: list[tuple[_Unit, _Status, str]]) -> str:
        # "no smoking" that is not there means the record shows smoking.
        flipped = [n[3:] for _, _, n in rows if n.startswith("no ")]
        plain_names = [n for _, st, n in rows if not n.startswith("no ") and not st.instead]
        parts = [f"{facts.source} shows {n}, but not in the time the criterion sets." if st.instead == _TIMING
                 else f"{facts.source} shows {n} only as adjuvant or neoadjuvant treatment, not for advanced disease."
                 if st.instead == _ADJUVANT
                 else f"{facts.source} shows {st.instead}, not {n}." for _, st, n in rows if st.instead]
        if plain_names:
            listed = ", ".join(dict.fromkeys(re.sub(r"^(?:an?|the) ", "", n) for n in plain_names))
            parts.append(f"{facts.source} says there is no {listed}.")
        if flipped:
            parts.append(f"{facts.source} shows {', '.join(dict.fromkeys(flipped))}, while this criterion is about "
                             "people without it.")
        return " ".join(parts)

    def evidence(rows: list[tuple[_Unit, _Status, str]]) -> tuple[int, ...]:
        return facts.evidence([i for _, st, _ in rows for i in st.evidence])

    def extra(rows: list[tuple[_Unit, _Status, str]]) -> str:
        return " ".join(dict.fromkeys(w for u, _, _ in rows for w in u.leftover if w != _NUMBER_TOKEN)) or "the limits"

    def _qualified(rows: list[tuple[_Unit, _Status, str]]) -> _Finding:
        return _Finding(
            "concept", None,
            f"{facts.source} shows {names(rows)}, but not whether the details in the criterion ({extra(rows)}) apply.",
            evidence(rows), discuss=True,
            closed_reason=f"{facts.source} shows {names(rows)} but does not describe it as the criterion does "
            f"({extra(rows)}), so this is taken not to apply.",
        )

    present_wanted = not requirement_negated
    if disjunctive:
        if clean:
            return _Finding("concept", present_wanted, f"{facts.source} shows {names(clean)}.", evidence(clean)), []
        if qualified:
            return _qualified(qualified), leftovers
        if results and len(negated) == len(results):
            return _Finding("concept", requirement_negated, not_there(negated), evidence(negated)), leftovers
    else:
        if negated:
            return _Finding("concept", requirement_negated, not_there(negated), evidence(negated)), leftovers
        if results and not absent and not qualified and not head_leftover:
            return _Finding("concept", present_wanted, f"{facts.source} shows {names(results)}.", evidence(results)), []
        if qualified and not absent:
            return _qualified(qualified), leftovers
        if results and not absent:
            # Everything named is on record; only words outside the named items are unexplained.
            return _Finding(
                "concept", None,
                f"{facts.source} shows {names(results)}, but not whether the rest of the criterion "
                f"({' '.join(dict.fromkeys(w for w in head_leftover if w != _NUMBER_TOKEN)) or 'the details'}) applies.",
                evidence(results), discuss=True,
                closed_reason=f"{facts.source} shows {names(results)} but not the rest of what the criterion "
                "describes, so this is taken not to apply.",
            ), leftovers
    missing = absent or results
    wants_absence = requirement_negated or all(n.startswith("no ") for _, _, n in missing)
    if wants_absence and kind == "inclusion" and facts.complete_record and not qualified and not clean:
        # "No history of X" (or "non-smoker") in a complete case summary that never mentions X.
        unmentioned = ", ".join(dict.fromkeys(n.removeprefix("no ") for _, _, n in missing))
        return _Finding("concept", True, f"{facts.source} does not mention {unmentioned}, so the patient is taken "
                        "not to have it.", ()), []
    shown_excepted = [k for k in excepted_in_order if _concept_status(k, facts).state == "affirmed"]
    if shown_excepted:
        left_out = ", ".join(dict.fromkeys(index[k].name for k in shown_excepted))
        said = (f"{facts.source} shows {left_out}, which this criterion leaves out, and nothing else it "
                "names.")
        return _Finding("concept", None, said, closed_reason=said), leftovers
    wanted = names(missing)
    if all(n.startswith("no ") for _, _, n in missing):
        return _Finding("concept", None, f"{facts.source} does not say whether there was "
                        f"{', '.join(dict.fromkeys(n[3:] for _, _, n in missing))}."), leftovers
    return _Finding("concept", None, f"{facts.source} does not mention {wanted}."), leftovers


# --- Putting the aspects together ---------------------------------------------------------------


# Longer than any line among the ~94,000 criteria of the sample records (the longest has 4,625 characters); the
# rules' time grows faster than the length, and trial records are untrusted, so a longer line is not read.
MAX_CRITERION_CHARS = 8_000


def evaluate(criterion_text: str | None, kind: CriterionKind, patient: Patient) -> Judgement:
    """Judge one criterion ("inclusion" or "exclusion") for a profile or a clinical note."""
    check_kind(kind)
    facts = patient_facts(patient)
    if len(criterion_text or "") > MAX_CRITERION_CHARS:
        return Judgement(Label.NOT_ENOUGH_INFO, f"This line is {len(criterion_text or ''):,} characters long, more "
                         f"than the {MAX_CRITERION_CHARS:,} this app reads in one criterion, so it was not checked. "
                         "Read it on the trial's record or ask the trial team.")
    text = _normalise(criterion_text or "")
    if not re.search(r"[A-Za-z0-9]", text):
        if kind == "exclusion":
            return Judgement(Label.NOT_MET, "The exclusion criterion is empty, so it rules no one out.")
        return Judgement(Label.NOT_APPLICABLE, "The criterion is empty.")

    labelled = split_label(text)
    if labelled is not None:
        outside = outside_scope(labelled[0], facts)
        if outside is not None:
            return Judgement(Label.NOT_APPLICABLE, outside)
        text = labelled[1]
    group = _GROUP_LABEL.match(text)
    if group:
        scoped_group = _group_scope(group.group("label"), facts)
        if scoped_group is not None:
            return scoped_group
        text = text[group.end():].strip()

    if facts.sex is not None:
        kept, other_sex = own_sex_sentences(text, facts.sex)
        if other_sex and not kept:
            who = {"female": "men", "male": "women"}[facts.sex]
            person = {"female": "a woman", "male": "a man"}[facts.sex]
            return Judgement(Label.NOT_APPLICABLE, f"This line sets rules for {who} only; it does not apply to {person}.",
                             facts.evidence(facts.sex_evidence))
        if other_sex:
            text = " ".join(kept)
        if sex_scope(text) == facts.sex and _SCOPED_AGREEMENT.search(text):
            inactive = _not_sexually_active(facts)
            agreement_only = not _PREGNANCY_WORDS.search(_SCOPED_AGREEMENT.sub(" ", text))
            if inactive is not None and agreement_only:
                return Judgement(Label.NOT_APPLICABLE, f"{facts.source} says the patient is not sexually "
                                 "active, so a rule about contraception does not concern the patient.",
                                 facts.evidence([inactive]))
            method = _contraception_in(facts)
            if method is not None and kind == "inclusion":
                return Judgement(Label.MET, f"{facts.source} says the patient uses {method[0]}, a highly effective method "
                                 "of contraception.", facts.evidence([method[1]]))
            return Judgement(Label.NOT_ENOUGH_INFO, "This line asks something of people of the patient's sex "
                             f"(such as agreeing to contraception) that {facts.source.lower()} does not say.")
    about_criteria = next((means for means, cue in _CRITERIA_REFERENCES if cue.search(text)), None)
    if about_criteria == "no_criteria" and kind == "exclusion":
        return Judgement(Label.NOT_MET, "This line says the trial has no such criteria; it rules no one out.")
    if about_criteria == "no_criteria":
        return Judgement(Label.NOT_APPLICABLE, "This line says the trial has no such criteria.")
    if about_criteria is not None:
        return Judgement(Label.NOT_ENOUGH_INFO, "This line points back at the trial's other criteria; "
                         "those lines decide, not this one.")
    stripped = _strip_non_requirements(text)
    if stripped is None and _MORE_CRITERIA.search(text):
        return Judgement(Label.NOT_ENOUGH_INFO, "The trial has more criteria than the ones listed here; "
                         "the trial team checks them.")
    if stripped is None:
        return Judgement(Label.NOT_APPLICABLE, "This line is a note about the criteria, not a criterion.")
    text = stripped

    permissive, required = permissive_sentences(text)
    if permissive and not required:
        return Judgement(Label.NOT_APPLICABLE, "This line says what is allowed, not what is required, so it does not "
                         "rule anyone in or out.")
    if permissive:
        named = [c for c in find_concepts(" ".join(permissive)) if not c.absent]
        if named and all(_concept_status(c.key, facts).state == "negated" for c in named):
            names = ", ".join(dict.fromkeys(concept_index()[c.key].name for c in named))
            return Judgement(Label.NOT_APPLICABLE, f"{facts.source} says there was no {names}, so the limits this "
                             "line sets on it do not concern the patient.")
        inner = evaluate(" ".join(required), kind, facts)
        against = (kind == "inclusion" and inner.label == Label.NOT_MET) or (kind == "exclusion" and inner.label == Label.MET)
        if against:
            return Judgement(Label.NEEDS_DISCUSSION, f"{inner.reason} The criterion also allows exceptions "
                             f"(\"{permissive[0][:160]}\"); ask whether they cover the patient.", inner.evidence_sentence_ids)
        return inner

    current = _current_treatment(text, kind, facts) or _sex_organ(text, kind, facts)
    if current is not None:
        return current

    scoped = (_scoped_to_absent_condition(text, facts) or _washout_without_treatment(text, facts)
              or _limit_scope(text, facts, kind))
    if scoped is not None:
        return scoped

    findings: list[_Finding] = []
    consumed: list[tuple[int, int]] = []
    for reader in (measurable_disease, life_expectancy, pd_l1, nyha_class, therapy_lines):
        reading = reader(text, facts)
        if reading is not None:
            findings.append(_Finding(reader.__name__, reading.truth, reading.reason, reading.evidence,
                                     open_question=reading.open_question))
            consumed += list(reading.spans)
    organ = organ_function(text, kind, facts)
    if organ is not None and organ.truth is not None:
        return Judgement(Label.MET if organ.truth else Label.NOT_MET, organ.reason, organ.evidence)
    pregnancy, spans = _pregnancy_finding(text, kind, facts)
    if pregnancy is not None:
        consumed += spans
    for finder in (_age_finding, _sex_finding, _performance_finding, _healthy_finding):
        finding, spans = finder(text, facts)
        if finding is not None:
            finding.standalone = finding.descriptor and _is_own_item(text, spans)
            if finding.aspect == "sex" and finding.not_applicable and pregnancy is None:
                return Judgement(Label.NOT_APPLICABLE, finding.reason, finding.evidence)
            findings.append(finding)
            consumed += spans
    measures, spans = _measure_findings(text, facts, kind)
    findings += measures
    consumed += spans
    unknowable = _UNKNOWABLE.search(text)
    if unknowable and not find_concepts(text) and not _CONSENT_WORDS.search(text):
        # Plans, future events, contraindications and paperwork: a case summary cannot settle them.
        findings.append(_Finding("unknowable", None, f"{facts.source} cannot say this; the trial team checks it "
                                 f"(\"{unknowable.group(0)}\").", open_question=True))
        consumed.append((0, len(text)))
    unread = "".join(" " if any(a <= i < b for a, b in consumed) else ch for i, ch in enumerate(text))
    lab = _LAB_THRESHOLD.search(unread)
    if lab and not find_concepts(_PARENS.sub(" ", text)) and not any(f.aspect == "measure" for f in findings):
        said = "The note does not" if facts.from_note else "Your answers and uploaded health records do not"
        findings.append(_Finding("lab", None, f"{said} give this test result.", open_question=True))

    consent = _consent_finding(text, facts, find_concepts(text), kind) if pregnancy is None else None
    if consent is not None:
        # Everything else in a consent criterion is wording about the consent itself.
        return _combine(findings + [consent], [], kind, facts)

    ignore = _AGE_SEX_WORDS if any(f.aspect in ("age", "sex") for f in findings) else frozenset()
    concept, leftover = _concept_finding(text, kind, facts, consumed, ignore)
    if concept is not None:
        findings.append(concept)
    leftover = [w for w in leftover if w not in _QUALIFIERS] if concept is None else leftover

    if pregnancy is not None:
        if pregnancy.not_applicable and not any(f.aspect == "concept" and f.truth for f in findings):
            return Judgement(Label.NOT_APPLICABLE, pregnancy.reason, pregnancy.evidence)
        # Pregnancy is what the criterion is about when nothing else is asked (a sex word aside); otherwise
        # it only says whom the criterion concerns, and an unknown pregnancy status leaves the rest to decide.
        is_subject = not leftover and all(f.aspect == "sex" and f.truth is not False for f in findings)
        if pregnancy.truth is not None or is_subject:
            findings.append(pregnancy)
    if organ is not None and findings and all(f.aspect == "measure" for f in findings):
        leftover = []  # a line about organ function and its lab limits only: the limits are the whole criterion
    alternatives = bool(re.search(r"\bor\b", _PARENS.sub(" ", text), re.I))
    if not findings and not facts.complete_record:
        # Nothing else read: a line that only names a disease the profile has ("Diagnosed with CF") is met.
        own = own_disease_named(text, facts)
        if own is not None and not _content_words(_PARENS.sub(" ", own[1])):
            return Judgement(Label.MET, f"Your profile names {own[0]}, the condition this line is about.")
    return _combine(findings, leftover, kind, facts, alternatives=alternatives)


# Lines about the criteria themselves (criteria_references.csv): "Subjects who do not meet the inclusion
# criteria" restates the other criteria ("other_criteria"); "This study has no exclusion criteria" says there
# are none ("no_criteria").
CRITERIA_REFERENCES_CSV = GENERIC_WORDS_CSV.with_name("criteria_references.csv")
_CRITERIA_REFERENCES = tuple((row["means"], re.compile(row["cue"], re.I))
                             for row in csv_rows(CRITERIA_REFERENCES_CSV))
# "Other protocol-defined inclusion/exclusion criteria apply": more criteria exist than the record lists.
_MORE_CRITERIA = re.compile(r"\b(?:other|additional)\b[^.;]{0,60}\bcriteria (?:may )?apply\b", re.I)
# Phrases that say when or how something is assessed, not what is required.
_ASSESSMENT_PHRASE = re.compile(
    r"\b(?:as|when)\s+(?:determined|assessed|judged|evidenced|confirmed|documented|measured|defined|evaluated|"
    r"verified|established)\s+by\b[^.;]*|\bat (?:the )?time of (?:signing|giving|obtaining)?\s*(?:the\s+)?"
    r"(?:written\s+)?"
    r"(?:informed\s+)?consent(?:\s+form)?\b|\b(?:other|additional) (?:protocol[- ]defined |study[- ]specific )?"
    r"(?:inclusion/exclusion |inclusion |exclusion |eligibility )?criteria (?:may )?apply\b[^.;]*|"
    r"\bplease contact the (?:study )?(?:investigator|team|site)[^.;]*",
    re.I,
)
# A sentence that opens with a condition speaks about some patients only ("If there is only one lesion ...").
_CONDITIONAL_SENTENCE = re.compile(r"^\W*(?:if|in case|in the case|when|where|for (?:patients|subjects|participants) "
                                   r"(?:with|who)|in (?:patients|subjects|participants) (?:with|who))\b", re.I)


# An inclusion criterion about a procedure or life-support the patient is going through now: whom it opens
# with, the state, the words that give its reason, and words of the schedule that say nothing of what it is
# (data/eligibility/current_treatment_cues.csv).
CURRENT_TREATMENT_CUES = cues.CueFile(GENERIC_WORDS_CSV.parent / "current_treatment_cues.csv",
                                      ("subject", "state", "reason", "ignored"))
_CURRENT_TREATMENT = re.compile(
    rf"^\W*(?:{CURRENT_TREATMENT_CUES.words('subject')}\s+)?(?:who\s+)?(?:(?:are|is|be|being)\s+)?"
    r"(?:currently\s+)?"
    rf"(?P<state>{CURRENT_TREATMENT_CUES.words('state')})",
    re.I,
)
_STATE_REASON = re.compile(rf"\s{CURRENT_TREATMENT_CUES.words('reason')}\s", re.I)
_STATE_WORDS = frozenset(r.cue for r in CURRENT_TREATMENT_CUES.rows() if "ignored" in r.roles)


def _current_treatment(text: str, kind: CriterionKind, facts: PatientFacts) -> Judgement | None:
    """"Patients undergoing carotid endarterectomy", "are mechanically ventilated": a complete case summary
    states a procedure or life-support the patient is going through, so when it names none of it the
    inclusion is not met.  Anything the note does mention leaves the ordinary rules to decide."""
    m = _CURRENT_TREATMENT.search(text)
    if m is None or kind != "inclusion" or not facts.complete_record:
        return None
    # What the patient goes through, without why or after what ("hemodialysis after catheterization").
    rest = re.split(r"[.;]|\(", text[m.end("state"):])[0]
    described = m.group("state") + _STATE_REASON.split(rest)[0]
    if any(_concept_status(c.key, facts).state != "absent" for c in find_concepts(described)):
        return None
    words = {_stem(w) for w in _content_words(described) if w not in _QUALIFIERS and w not in _STATE_WORDS}
    said = {_stem(w) for sentence in facts.sentences if not is_boilerplate(sentence.text)
            for w in _content_words(sentence.text)}
    if not words or words & said:
        return None
    what = described.strip().rstrip(",")
    return Judgement(Label.NOT_MET, f"A full case summary would mention this ({what[:120]}); the note does not, so "
                     "the patient is taken not to be going through it.")


SEX_ORGANS_CSV = GENERIC_WORDS_CSV.with_name("sex_organs.csv")
_SEX_ORGANS = {r["organ"]: (r["sex"], re.compile(rf"\b(?:{r['removed_by']})\b", re.I))
               for r in csv_rows(SEX_ORGANS_CSV)}
_HAS_ORGAN = re.compile(
    r"^\W*(?:(?:patients?|subjects?|participants?|women|men|individuals?|people)\s+)?(?:who\s+)?(?:must\s+)?"
    r"(?:are\s+)?(?:have|has|having|with)\s+(?:an?\s+|the(?:ir)?\s+|both\s+)?(?:intact\s+|a\s+)?(?P<organ>"
    + "|".join(_SEX_ORGANS) + r")(?:\s+(?:in place|intact))?\W*$", re.I)


def _sex_organ(text: str, kind: CriterionKind, facts: PatientFacts) -> Judgement | None:
    """"Have a cervix", "women with an intact uterus" (sex_organs.csv): met for a patient of the organ's sex
    whose record names no operation removing it; anything else is left open (the wording may be chosen to
    include transgender people), never counted against the patient."""
    m = _HAS_ORGAN.match(text)
    if m is None or kind != "inclusion" or facts.sex is None:
        return None
    organ = m.group("organ").lower()
    sex, removed = _SEX_ORGANS[organ]
    said = [s.id for s in facts.sentences if removed.search(s.text)]
    if sex != facts.sex or said or not facts.complete_record:
        article = "" if organ.endswith("s") else "a "
        return Judgement(Label.NEEDS_DISCUSSION, f"Whether the patient has {article}{organ} is not "
                         "clear from the record.", facts.evidence(said))
    return Judgement(Label.MET, f"{facts.source} describes a {facts.sex} patient and names no operation "
                     f"removing the {organ}.", facts.evidence(facts.sex_evidence))




# Methods counted as highly effective (failure below 1% a year, as the CTFG contraception guidance lists
# them), and the words of a line that asks for contraception (data/eligibility/contraception_cues.csv).
CONTRACEPTION_CUES = cues.CueFile(GENERIC_WORDS_CSV.parent / "contraception_cues.csv",
                                  ("effective", "agreement"))
_EFFECTIVE_CONTRACEPTION = CONTRACEPTION_CUES.compile("effective")
_SCOPED_AGREEMENT = CONTRACEPTION_CUES.compile("agreement")


NOT_SEXUALLY_ACTIVE_CSV = GENERIC_WORDS_CSV.with_name("not_sexually_active.csv")
_NOT_SEXUALLY_ACTIVE = re.compile(
    r"\b(?:" + "|".join(f"(?:{r['cue']})" for r in csv_rows(NOT_SEXUALLY_ACTIVE_CSV)) + r")\b", re.I)


def _not_sexually_active(facts: PatientFacts) -> int | None:
    """The id of a note sentence saying the patient has no sexual partners (not_sexually_active.csv)."""
    return next((s.id for s in facts.sentences if _NOT_SEXUALLY_ACTIVE.search(s.text)), None)


def _contraception_in(facts: PatientFacts) -> tuple[str, int] | None:
    """The highly effective contraception the note says the patient uses, with its sentence id."""
    for sentence in facts.sentences:
        m = _EFFECTIVE_CONTRACEPTION.search(sentence.text)
        if m and assertion_at(sentence.text, m.start(), m.end()) == "affirmed":
            return m.group(0), sentence.id
    return None


# "For patients with chronic hepatitis B, the viral load must be undetectable", "Patients with a history of
# hepatitis C must have been treated and cured": the opening names whom the rule is for.
_SCOPE_OPENING = re.compile(
    r"^\W*(?:(?:for|in)\s+)?(?:patients?|subjects?|participants?|those|individuals?)\s+(?:with|who have|who had)\s+"
    r"(?P<scope>[^,;:]{3,120}?)(?:,|\s+(?:must|need|needs|are required|is required|will need|have to)\b)",
    re.I,
)


def _scoped_to_absent_condition(text: str, facts: PatientFacts) -> Judgement | None:
    """A rule for patients with some condition, when the record shows the patient does not have it."""
    m = _SCOPE_OPENING.match(text)
    if m is None:
        return None
    rest = text[m.end("scope"):].lstrip(" ,")
    # The rule must follow at once ("..., the viral load must be undetectable"); "..., as these patients should be
    # offered ..." explains an exclusion rather than setting a rule for a group.
    if re.match(r"(?:as|because|since|which|who|whose|given)\b", rest, re.I) or not re.search(
            r"\b(?:must|needs?|are required|is required|have to|has to)\b", " ".join(rest.split()[:10]), re.I):
        return None
    named = [c for c in find_concepts(m.group("scope")) if not c.absent]
    # The most specific names decide: "hepatitis B infection" is about hepatitis B, not any infection.
    named = [c for c in named if not any(c.key in ancestors(o.key) for o in named)]
    if not named:
        return None
    states = [_concept_status(c.key, facts).state for c in named]
    if all(state == "negated" for state in states) or (facts.complete_record and all(st != "affirmed" for st in states)):
        names = ", ".join(dict.fromkeys(concept_index()[c.key].name for c in named))
        return Judgement(Label.NOT_APPLICABLE, f"This rule is for patients with {names}; {facts.source.lower()} shows "
                         f"no {names}, so it does not concern the patient.")
    return None


# A label naming the group a criterion is for: "Healthy participants: ...", "Subjects receiving chemotherapy: ...".
_GROUP_LABEL = re.compile(
    r"^\W*(?P<label>(?:for\s+)?(?:(?:healthy|control|normal)\s+)?(?:subjects?|patients?|participants?|volunteers?|"
    r"controls?|healthy (?:subjects?|participants?|volunteers?|controls?)|cohort \w+|arm \w+|group \w+|part \w+)"
    r"(?:\s+[\w/-]+){0,5}?)\s*:\s*(?=\S)",
    re.I,
)


def _group_scope(label: str, facts: PatientFacts) -> Judgement | None:
    """Not applicable when the label names a group the patient is not in (healthy volunteers, people with X)."""
    if re.search(r"\b(?:healthy|control|normal)\b", label, re.I):
        if facts.healthy_volunteer is False:
            return Judgement(Label.NOT_APPLICABLE, f"This line is for {label.strip().lower()}; the patient is not a "
                             "healthy volunteer.")
        return None
    named = [c for c in find_concepts(label) if not c.absent]
    named = [c for c in named if not any(c.key in ancestors(o.key) for o in named)]
    if named and all(_concept_status(c.key, facts).state == "negated" for c in named):
        return Judgement(Label.NOT_APPLICABLE, f"This line is for {label.strip().lower()}; "
                         f"{facts.source.lower()} shows the patient is not in that group.")
    return None


# "At least 4 weeks since prior radiotherapy and recovered": a waiting time after a treatment.
_WASHOUT = re.compile(r"\b(?:since|after|from)\s+(?:the\s+)?(?:last\s+(?:dose\s+of\s+)?|prior\s+|previous\s+|completion of\s+)"
                      r"|\b(?:washout|wash-out)\b", re.I)


def _washout_without_treatment(text: str, facts: PatientFacts) -> Judgement | None:
    """A waiting time after a treatment does not concern a patient the record shows never had it."""
    m = _WASHOUT.search(text)
    if m is None or not re.search(r"\d|\b(?:one|two|three|four|six|eight|twelve)\b", text[: m.start()] + text[m.end():]):
        return None
    named = [c for c in find_concepts(text[m.end():]) if not c.absent]
    named = [c for c in named if "anticancer_therapy" in ancestors(c.key) or c.key == "anticancer_therapy"]
    if not named:
        return None
    states = [_concept_status(c.key, facts).state for c in named]
    if all(state == "negated" for state in states) or (facts.complete_record and all(st == "absent" for st in states)):
        names = ", ".join(dict.fromkeys(concept_index()[c.key].name for c in named))
        return Judgement(Label.NOT_APPLICABLE, f"{facts.source} shows no {names}, so the waiting time after it does "
                         "not concern the patient.")
    return None


def _limit_scope(text: str, facts: PatientFacts, kind: CriterionKind) -> Judgement | None:
    """"For participants with eGFR >= 45, potassium must be ...": a one-clause rule whose condition on a
    measure the patient's own value shows false does not concern them (data/eligibility/limit_context.csv)."""
    norm = _normalise(text)
    if ";" in norm:
        return None
    conditions = [cut for cut in limits_in(norm)
                  if limit_role(norm, cut.name_start, cut.span[1]) == "condition"]
    truths = [judge_limit(cut, facts, kind) for cut in conditions]
    if conditions and all(truth is False for truth, _, _ in truths):
        return Judgement(Label.NOT_APPLICABLE, f"This rule is only for people with {conditions[0].written}; "
                         f"{truths[0][1]}", truths[0][2])
    return None


def _strip_non_requirements(text: str) -> str | None:
    """The criterion without assessment phrases, 'other criteria may apply' notes and conditional sentences
    (kept when nothing else is left)."""
    stripped = _ASSESSMENT_PHRASE.sub(" ", text)
    sentences = criterion_sentences(stripped)
    unconditional = [p for p in sentences if not _CONDITIONAL_SENTENCE.match(p)]
    if unconditional and len(unconditional) < len(sentences):
        stripped = " ".join(unconditional)
    stripped = re.sub(r"\s+", " ", stripped).strip()
    if not _content_words(stripped):
        return None if _content_words(text) != _content_words(stripped) else text
    return stripped


# What a case summary cannot settle: plans, events during the study, paperwork (unknowable_cues.csv).
UNKNOWABLE_CUES = cues.CueFile(GENERIC_WORDS_CSV.parent / "unknowable_cues.csv", ("unknowable",))
_UNKNOWABLE = UNKNOWABLE_CUES.compile("unknowable")

# A laboratory or physiological limit: a comparison with a number and a unit.
_LAB_THRESHOLD = re.compile(
    r"(?:<=|>=|<|>|≤|≥|less than|greater than|more than|above|below|at least|at most)\s*\d+(?:[.,]\d+)?\s*"
    r"(?:mg/dl|mg/l|g/dl|g/l|mmol/l|µmol/l|umol/l|ml/min|mls/min|iu/l|u/l|%|x\s*10|×\s*10|/mm3|/ul|/µl|kg/m2|"
    r"mm ?hg|x uln|× uln|times)",
    re.I,
)


def _is_own_item(text: str, spans: list[tuple[int, int]]) -> bool:
    """Whether an age or sex phrase stands as a list item of its own rather than describing the others."""
    if not spans:
        return False
    start, end = spans[0]
    before = re.split(r"[,;]|\bor\b", text[:start])[-1]
    after = re.split(r"[,;]|\bor\b", text[end:])[0]
    others = [w for w in _content_words(before + " " + after) if w not in _AGE_SEX_WORDS]
    return not others and bool(re.search(r"[,;]|\bor\b", text))


def _combine(findings: list[_Finding], leftover: list[str], kind: CriterionKind, facts: PatientFacts, *,
             alternatives: bool = False) -> Judgement:
    """One label from the findings; ``alternatives``: the line lists things joined by "or" (outside brackets)."""
    false = [f for f in findings if f.truth is False]
    true = [f for f in findings if f.truth is True]
    unknown = [f for f in findings if f.truth is None]
    evidence = tuple(sorted({i for f in findings for i in f.evidence}))

    if kind == "exclusion" and all(f.aspect in ("measure", "lab") for f in findings) and any(
            f.aspect == "measure" for f in findings):
        # Lab limits in an exclusion are a list that keeps people out when any one of them holds ("any of the
        # following"): one value inside its range decides; values inside their limits settle nothing while another
        # limit has no value.
        if true:
            return Judgement(Label.MET, " ".join(f.reason for f in true[:4]), evidence)
        known = " ".join(f.reason for f in false[:4])
        if unknown:
            return Judgement(Label.NOT_ENOUGH_INFO, f"{known} {unknown[0].reason}".strip(), evidence)
        return Judgement(Label.NOT_MET, known, evidence)
    items = [f for f in findings if not f.descriptor]
    if false and kind == "exclusion" and alternatives and any(f.truth is not False for f in items):
        # "ECOG >= 2 or heart failure": any one item keeps the patient out, so one that does not hold settles
        # nothing while another holds or may hold.
        held = [f for f in items if f.truth]
        if held and not any(f.truth is False for f in findings if f.descriptor):
            return Judgement(Label.MET, held[0].reason, held[0].evidence)
        if not held:
            return _combine([f for f in findings if f.descriptor or f.truth is not False], leftover, kind, facts)
    if false:
        first = false[0]
        if kind == "exclusion" and first.descriptor and (len(findings) > len(false) or leftover):
            if first.standalone:
                # One item of an exclusion list does not hold; the other items decide.
                return _combine([f for f in findings if f is not first], leftover, kind, facts)
            return Judgement(Label.NOT_APPLICABLE, f"This exclusion is about another group of people. {first.reason}",
                             first.evidence)
        return Judgement(Label.NOT_MET, first.reason, first.evidence)

    if true and not unknown and not leftover:
        named = 4 if all(f.aspect == "measure" for f in true) else 2  # each lab limit and the value it was met by
        return Judgement(Label.MET, " ".join(f.reason for f in true[:named]),
                         tuple(sorted({i for f in true for i in f.evidence})))

    if kind == "exclusion" and facts.complete_record and not any(f.open_question for f in unknown):
        # A complete case summary that does not mention something an exclusion needs: the exclusion does not apply.
        reason = next((f.closed_reason or f.reason for f in unknown if f.aspect == "concept"),
                      f"{facts.source} does not mention anything this exclusion describes.")
        return Judgement(Label.NOT_MET, reason, evidence)

    if not findings:
        return Judgement(Label.NOT_ENOUGH_INFO, f"{facts.source} does not say whether this applies.")

    discuss = [f for f in unknown if f.discuss]
    if discuss:
        return Judgement(Label.NEEDS_DISCUSSION, discuss[0].reason, evidence)
    if unknown:
        return Judgement(Label.NOT_ENOUGH_INFO, unknown[0].reason, evidence)
    known = " ".join(f.reason for f in true[:1])
    return Judgement(Label.NOT_ENOUGH_INFO, f"{known} The rest of the criterion is not on record.".strip(), evidence)


def criterion_text_for(criterion: Criterion) -> str:
    """The text to judge for a parsed criterion: sub-items included, and a short section label ("Age") prefixed."""
    text = criterion.full_text
    if criterion.section and (len(criterion.section.split()) <= 3 or label_meaning(criterion.section)):
        return f"{criterion.section}: {text}"
    return text
