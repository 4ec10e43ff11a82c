"""General statements about criteria language the rule evaluator relies on.

Each reader here says what a *kind* of criterion sentence means, never what one trial means:
measurable disease (RECIST), life expectancy, organ function stated as normal or adequate,
sentences scoped to one sex ("A female participant is eligible if ..."), permissive sentences
("... may be included", "... are allowed") and PD-L1 expression thresholds.  Each returns a
:class:`Reading` (or None when the criterion is not of that kind) which the rules turn into a finding.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

from services.eligibility.parser import criterion_sentences
from services.eligibility.patient import PatientFacts, assertion_at, is_boilerplate
from services.eligibility.vocabulary import find_concepts


@dataclass(frozen=True)
class Reading:
    """What one reader found: True/False/None for the criterion's statement, why, and where in the note."""

    truth: bool | None
    reason: str
    evidence: tuple[int, ...] = ()
    spans: tuple[tuple[int, int], ...] = ()
    open_question: bool = True  # a complete note may still simply not state it


def _sentences(facts: PatientFacts) -> list[tuple[int, str]]:
    return [(s.id, s.text) for s in facts.sentences if not is_boilerplate(s.text)]


# --- Measurable disease (RECIST) -------------------------------------------------------------------

_MEASURABLE_CRITERION = re.compile(
    r"\b(?:(?:uni|bi)?dimensionally )?measurable (?:disease|lesions?|tumou?rs?|target lesions?)\b"
    r"|\bat least one (?:target )?lesion\b[^.;]{0,60}\bRECIST|\bmeasurable\b[^.;]{0,40}\bRECIST",
    re.I,
)
_NON_MEASURABLE = re.compile(
    r"\b(?:non-?measurable|not measurable|unmeasurable|evaluable but not measurable|no measurable)\b", re.I
)
_MEASURABLE_NOTE = re.compile(r"\bmeasurable (?:disease|lesions?|tumou?rs?|target lesions?)\b|\btarget lesions?\b", re.I)
# A solid lesion whose longest diameter is at least 10 mm on CT is measurable under RECIST 1.1.
_LESION_SIZE = re.compile(
    r"(?P<n>\d{1,3}(?:\.\d+)?)\s*(?:x\s*\d{1,3}(?:\.\d+)?\s*)?(?P<u>cm|mm)\b[^.;]{0,40}?"
    r"\b(?P<what>mass|lesion|tumou?r|nodule|metasta\w*|lump)\b"
    r"|\b(?P<what2>mass|lesion|tumou?r|nodule|metasta\w*|lump)\b[^.;]{0,30}?(?P<n2>\d{1,3}(?:\.\d+)?)\s*(?:x\s*\d{1,3}"
    r"(?:\.\d+)?\s*)?(?P<u2>cm|mm)\b",
    re.I,
)


_M_PROTEIN = re.compile(r"\b(?:serum )?(?:M-?protein|M-?spike|monoclonal protein|paraprotein)\b[^.;0-9]{0,25}"
                        r"(?P<n>\d{1,2}(?:\.\d+)?)\s*g/dL", re.I)


def measurable_disease(text: str, facts: PatientFacts) -> Reading | None:
    """Whether the patient has measurable disease (RECIST), from what the note says or a lesion's size."""
    m = _MEASURABLE_CRITERION.search(text)
    if m is None or _NON_MEASURABLE.search(text[: m.end()]):
        return None
    if re.search(r"\b(?:to|in|into|of|on|from|within|at)\s+(?:the\s+|a\s+|any\s+)?$", text[: m.start()], re.I):
        return None  # "radiotherapy to a measurable lesion": the lesion is the object of something else
    # A criterion that opens with measurable disease is about it; the rest says how it is measured.
    about = len(text[: m.start()].split()) <= 12
    spans = ((0, len(text)),) if about or len(text.split()) <= 40 else (m.span(),)
    for sid, sentence in _sentences(facts):
        if _NON_MEASURABLE.search(sentence):
            return Reading(False, f"{facts.source} says the disease is not measurable.", facts.evidence([sid]),
                           spans, False)
        said = _MEASURABLE_NOTE.search(sentence)
        if said and assertion_at(sentence, said.start(), said.end()) == "affirmed":
            return Reading(True, f"{facts.source} says there is measurable disease.", facts.evidence([sid]), spans,
                           False)
    for sid, sentence in _sentences(facts):
        protein = _M_PROTEIN.search(sentence)
        if protein and float(protein.group("n")) >= 0.5:
            return Reading(True, f"{facts.source} gives a serum M-protein of {protein.group('n')} g/dL; under the IMWG "
                           "criteria 0.5 g/dL or more is measurable disease.", facts.evidence([sid]), spans,
                           False)
        for size in _LESION_SIZE.finditer(sentence):
            value = float(size.group("n") or size.group("n2"))
            unit = (size.group("u") or size.group("u2")).lower()
            mm = value * 10 if unit == "cm" else value
            if mm >= 10:
                return Reading(True, f"{facts.source} describes a {value:g} {unit} lesion; under RECIST 1.1 a lesion of at "
                               "least 10 mm on CT is measurable.", facts.evidence([sid]), spans, False)
    return Reading(None, f"{facts.source} does not say whether there is measurable disease (RECIST).", (), spans, True)


# --- Life expectancy --------------------------------------------------------------------------------

_UNIT_WEEKS = {"hour": 1 / 168, "hr": 1 / 168, "day": 1 / 7, "week": 1.0, "wk": 1.0, "month": 52 / 12,
               "mo": 52 / 12, "year": 52.0, "yr": 52.0}
_COUNT_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a": 1, "an": 1}
_LIFE_CRITERION = re.compile(
    r"\b(?:life expectancy|expected survival|survival expectancy|expected to (?:live|survive)|estimated survival|"
    r"anticipated survival|prognosis)\b(?P<rest>[^.;]{0,60})",
    re.I,
)
_AMOUNT = re.compile(
    r"(?P<op>>=|=>|>|<=|<|at least|more than|greater than|longer than|over|of at least|minimum of|less than|under|"
    r"shorter than|of|exceeding|beyond)?\s*(?P<n>\d{1,3}|one|two|three|four|six|twelve)\s*(?P<u>days?|weeks?|wks?|months?|"
    r"mos?|years?|yrs?)\b",
    re.I,
)


def in_weeks(count: str, unit: str) -> float:
    """A count ("12", "six", "a") of a time unit ("months", "wks") in weeks (rules.py's time limits too)."""
    raw = count.lower()
    unit = unit.lower().rstrip("s")
    return float(_COUNT_WORDS.get(raw, raw)) * _UNIT_WEEKS.get(unit, _UNIT_WEEKS.get(unit[:2], 1.0))


# Each way a comparison is written (lower case), by the symbol that shows it: "under 6 months" is below 6 months,
# "of at least 12 weeks" at or above (the rules show a lab limit with these symbols).

def age_text(years: float) -> str:
    """An age in words: in days under two months ("7 days"), in months under one year ("6 months"), else in
    years ("18 years", "2.5 years")."""
    if years * 12 < 2:
        days = round(years * 365)
        return f"{days} day{'s' if days != 1 else ''}"
    return f"{round(years * 12)} months" if years < 1 else f"{years:g} years"


SYMBOLS = {
    **dict.fromkeys(("<", "less than", "lower than", "shorter than", "below", "under"), "<"),
    **dict.fromkeys(("<=", "≤", "at most", "up to", "less than or equal to", "below or equal to", "equal to"), "≤"),
    **dict.fromkeys((">", "more than", "greater than", "higher than", "longer than", "above", "over", "exceeding",
                     "beyond"), ">"),
    **dict.fromkeys((">=", "=>", "≥", "at least", "of at least", "minimum of", "greater than or equal to"), "≥"),
}
_TESTS = {"<": operator.lt, "≤": operator.le, ">": operator.gt, "≥": operator.ge}


def comparison(op: str) -> Callable[[float, float], bool] | None:
    """The test a comparison word or symbol makes (None for one not listed)."""
    return _TESTS.get(SYMBOLS.get(op.lower(), ""))


def _bound(op: str | None, n: float, unwritten: Callable[[float, float], bool]) -> Callable[[float], bool]:
    """The values a bound word and its number allow (``unwritten`` is the comparison when no word is written)."""
    test = comparison(op or "") or unwritten
    return lambda x: test(x, n)


def _between(low: float, high: float) -> Callable[[float], bool]:
    """The values from low to high, both included."""
    return lambda x: low <= x <= high


def _settles(result: Callable[[float], bool], limit: Callable[[float], bool], *cuts: float) -> bool | None:
    """True when every value a result allows meets the limit, False when none does, None when only some do.

    Both are bounded only at ``cuts``, so each cut and one value from each stretch between and beyond them
    stand for all values.
    """
    points = sorted(set(cuts))
    probes = [points[0] - 1, *points, *((a + b) / 2 for a, b in pairwise(points)), points[-1] + 1]
    meets = {limit(x) for x in probes if result(x)}
    return meets.pop() if len(meets) == 1 else None


def _as_symbols(text: str) -> str:
    """"not less than 12 weeks" is at least 12 weeks and "no more than" at most: written as ">=" and "<=" (as are
    "≥" and "≤")."""
    text = text.replace("≥", ">=").replace("≤", "<=")
    text = re.sub(r"\b(?:not|no) less than\b", ">=", text, flags=re.I)
    return re.sub(r"\b(?:not|no) (?:more|longer) than\b", "<=", text, flags=re.I)


def life_expectancy(text: str, facts: PatientFacts) -> Reading | None:
    """A life-expectancy requirement ("life expectancy >= 12 weeks") against what the note states."""
    m = _LIFE_CRITERION.search(text)
    if m is None:
        return None
    amount = _AMOUNT.search(_as_symbols(m.group("rest")))
    if amount is None:
        return None
    need = in_weeks(amount.group("n"), amount.group("u"))
    wanted = _bound(amount.group("op"), need, operator.ge)
    spans = ((m.start(), m.end()),)
    unsettled = ""
    for sid, sentence in _sentences(facts):
        said = _LIFE_CRITERION.search(sentence)
        if said is None:
            continue
        have = _AMOUNT.search(_as_symbols(said.group("rest")))
        if have is None:
            continue
        value = in_weeks(have.group("n"), have.group("u"))
        # A bound in the note settles a requirement only in the direction it speaks: "more than 6 months"
        # meets "at least 12 weeks" but says nothing against "at least 1 year".
        ok = _settles(_bound(have.group("op"), value, operator.eq), wanted, value, need)
        if ok is None:
            unsettled = unsettled or (f"{facts.source} gives a life expectancy of {have.group(0).strip()}, which does not "
                                      f"settle the trial's limit ({amount.group(0).strip()}).")
            continue
        words = "meets" if ok else "does not meet"
        return Reading(ok, f"{facts.source} gives a life expectancy of {have.group(0).strip()}, which {words} the "
                       f"trial's limit ({amount.group(0).strip()}).", facts.evidence([sid]), spans, False)
    return Reading(None, unsettled or f"{facts.source} does not state a life expectancy; the trial team estimates it.", (),
                   spans, True)


# --- Organ function stated as normal or adequate -----------------------------------------------------

_ORGANS: dict[str, re.Pattern[str]] = {
    "marrow": re.compile(
        r"\b(?:bone marrow|h(?:a)?ematolog\w*|blood counts?|CBC|complete blood count|neutrophils?|ANC|platelets?|PLT|"
        r"h(?:a)?emoglobin|Hb|HGB|white (?:blood )?cells?|WBC|leukocytes?|granulocytes?)\b", re.I),
    "liver": re.compile(
        r"\b(?:hepatic|liver|bilirubin|AST|ALT|SGOT|SGPT|transaminases?|aminotransferases?|LFTs?|alkaline phosphatase|"
        r"ALP)\b", re.I),
    "kidney": re.compile(
        r"\b(?:renal|kidneys?|creatinine|CrCl|GFR|eGFR|glomerular filtration)\b", re.I),
}
_ORGAN_WORDS = re.compile(
    r"\b(?:organ|end[- ]organ|bone marrow|h(?:a)?ematolog\w*|hepatic|liver|renal|kidney|marrow)\s+(?:and\s+\w+\s+)?"
    r"(?:function|reserve)\b|\borgan (?:and marrow )?function\b|\blaborator(?:y|ies) (?:values?|parameters?|tests?)\b",
    re.I,
)
_INADEQUATE = re.compile(r"\b(?:inadequate|insufficient|abnormal|impaired|impairment|poor|dysfunction|failure|"
                         r"insufficiency|compromised)\b", re.I)
_NORMAL_NOTE = re.compile(r"\b(?:normal|within normal limits|WNL|unremarkable|adequate|preserved|intact)\b", re.I)
_ABNORMAL_NOTE = re.compile(r"\b(?:abnormal|elevated|raised|high|low|impaired|decreased|deranged|failure|insufficiency|"
                            r"dysfunction|reduced)\b", re.I)
_ALL_ORGANS = re.compile(r"\b(?:organ function|laborator(?:y|ies)|labs|blood tests?|blood work|bloods)\b", re.I)
# Once organ and lab words are taken away, these are all that may be left of an organ-function criterion.
_LAB_FILLER = re.compile(
    r"\b(?:adequate|sufficient|acceptable|function|functions|reserve|organ|as defined by|defined as|defined|by|as|"
    r"follows?|the following|laboratory|lab|values?|tests?|results?|parameters?|within|days?|prior to|before|"
    r"of|to|with|and|or|for|in|on|at|patients?|subjects?|participants?|must|have|has|should|be|is|are|"
    r"uln|upper|lower|limits?|normal|institutional|times|x|total|serum|count|absolute|level|levels|"
    r"calculated|measured|estimated|using|cockcroft[- ]gault|formula|equation|mdrd|ckd-epi|no|not|greater|less|"
    r"than|more|at least|least|equal|mg|dl|ml|min|l|g|umol|mmol|mm3|ul|µl|cells|per|liver|metastases|"
    r"gilbert'?s?|syndrome|if|unless|except|who|where|screening|enrollment|registration|randomi[sz]ation|treatment|"
    r"start|first|dose|study|drug|transfusion|growth factors?|support|without|the|a|an|e\.g|i\.e|following|"
    r"clearance|standard|collected|aspartate|alanine|glutamic|oxaloacetic|glutamate|pyruvate|transaminases?|"
    r"hematopoietic|haematopoietic|institution|parameters?|criteria|but|below|above|equal|mls?|kg|m2|g/l|"
    r"mg/dl|µmol/l|umol/l|less|sgot|sgpt)\b",
    re.I,
)


def _organs_in(text: str) -> set[str]:
    return {organ for organ, pattern in _ORGANS.items() if pattern.search(text)}


def _normal_organs(facts: PatientFacts) -> tuple[set[str], list[int], set[str]]:
    """Organs the note states normal, the sentences saying so, and organs it states abnormal."""
    normal: set[str] = set()
    abnormal: set[str] = set()
    ids: list[int] = []
    for sid, sentence in _sentences(facts):
        for clause in re.split(r";|\bbut\b|\bexcept\b|\bhowever\b", sentence, flags=re.I):
            organs = _organs_in(clause)
            if _ALL_ORGANS.search(clause):
                organs |= set(_ORGANS)
            if not organs:
                continue
            if _NORMAL_NOTE.search(clause) and not _ABNORMAL_NOTE.search(clause):
                normal |= organs
                ids.append(sid)
            elif _ABNORMAL_NOTE.search(clause) and not _NORMAL_NOTE.search(clause):
                abnormal |= _organs_in(clause)
    return normal - abnormal, ids, abnormal


def organ_function(text: str, kind: str, facts: PatientFacts) -> Reading | None:
    """An organ-function criterion (adequate organ function, or lab limits of blood, liver and kidney) judged
    from a note that states those organs' function or tests are normal.

    A normal result lies inside the reference range, and the adequacy limits trials set (e.g. ANC >= 1.5,
    bilirubin <= 1.5 x ULN, creatinine clearance >= 60) are looser than that range, so "normal" meets them.
    An exclusion that describes poor function ("inadequate organ function", "creatinine > 2 x ULN") does
    not apply.  Only criteria that are about nothing else are read this way.
    """
    organs = _organs_in(text)
    general = _ORGAN_WORDS.search(text)
    if general and re.search(r"\borgan\b", general.group(0), re.I):
        organs |= set(_ORGANS)
    if not organs:
        return None
    # Strip organ words, numbers and filler; anything substantial left means the criterion asks more.
    rest = text
    for pattern in _ORGANS.values():
        rest = pattern.sub(" ", rest)
    rest = _ORGAN_WORDS.sub(" ", rest)
    rest = re.sub(r"[\d.,]+|[<>=≤≥%/×*()\[\]:;+\-]|\^|10\^?9", " ", rest)
    rest = _LAB_FILLER.sub(" ", rest)
    leftover = re.findall(r"[A-Za-z]{3,}", rest)
    if len(leftover) > 2:
        return None
    # Which way the line points: "adequate ... function" asks for good function, "impaired", "failure" or a
    # limit in an exclusion describes poor function, and a leading "No" turns either around.
    unlabelled = re.sub(r"^[A-Za-z][\w /&-]{0,40}:\s*", "", text)
    wants_good = bool(re.search(r"\b(?:adequate|sufficient|acceptable|satisfactory|preserved|appropriate)\b", text, re.I))
    describes_poor = bool(_INADEQUATE.search(text)) or (kind == "exclusion" and not wants_good)
    if re.match(r"\W*(?:no|without|absence of|free of|not)\b", unlabelled, re.I):
        describes_poor = not describes_poor
    normal, ids, abnormal = _normal_organs(facts)
    spans = ((0, len(text)),)
    names = {"marrow": "blood counts", "liver": "liver function", "kidney": "kidney function"}
    wanted = ", ".join(names[o] for o in sorted(organs))
    if organs & abnormal:
        return None  # an abnormal result: the numbers decide, which the measurement rules read
    if organs <= normal:
        truth = not describes_poor
        return Reading(truth, f"{facts.source} says {wanted} {'is' if len(organs) == 1 else 'are'} normal, "
                       "which meets the usual adequacy limits.", facts.evidence(ids), spans, False)
    return Reading(None, f"{facts.source} does not give the test results this asks about ({wanted}).", (), spans, True)


# --- Sex-scoped and permissive sentences -------------------------------------------------------------

_FEMALE = r"(?:female|females|wom[ae]n|girls?|WOCBP|WOCBPs)"
_MALE = r"(?:male|males|m[ae]n|boys?)"
_SCOPE_TAIL = (
    r"(?:\s+(?:participants?|patients?|subjects?|volunteers?|individuals?|persons?|partners?))?"
    r"(?:\s+(?:of|with|who are of|who have|capable of|able to have)\s+(?:child[- ]?bearing|reproductive|"
    r"procreative)(?:\s+(?:potential|age))?|\s+who (?:are|is|could|can|may) (?:of child[- ]?bearing|sexually active|"
    r"able|capable|not|become|fertile|post-?menopausal|pre-?menopausal)[^:,;]{0,40}?|\s+(?:with|of) (?:a )?"
    r"(?:potential|possibility) (?:of|for) (?:pregnancy|conception|becoming pregnant))?"
)
_SCOPE_VERB = (r"\s*(?::|-|must\b|should\b|shall\b|will\b|would\b|can\b|could\b|need\b|are\b|is\b|agree\w*\b|"
               r"who\b|may\b|eligible\b|need to\b|have\b|has\b|using\b|use\b|under \d+\b|over \d+\b|"
               r"aged? (?:under|over|<|>)\s*\d+\b)")
_SEX_SCOPED = {
    "female": re.compile(
        r"^\W*(?:for\s+|in\s+)?(?:a|an|all|any)?\s*" + _FEMALE + _SCOPE_TAIL + _SCOPE_VERB
        + r"|\bif (?:the (?:patient|participant|subject) is )?(?:a )?(?:female|woman)\b"
        + r"|\b(?:a|any) female (?:participant|patient|subject) is eligible\b",
        re.I,
    ),
    "male": re.compile(
        r"^\W*(?:for\s+|in\s+)?(?:a|an|all|any)?\s*" + _MALE + _SCOPE_TAIL + _SCOPE_VERB
        + r"|\bif (?:the (?:patient|participant|subject) is )?(?:a )?(?:male|man)\b"
        + r"|\b(?:a|any) male (?:participant|patient|subject) is eligible\b",
        re.I,
    ),
}
# Sentences that only set who is meant by the list ("Women with breast cancer") are requirements, not
# scopes: a scope sentence names one sex and then says what applies to them.
_SCOPE_CONTENT = re.compile(
    r"\b(contracept\w*|pregnan\w*|child[- ]?bearing|breast[- ]?feed\w*|lactat\w*|nursing|sperm|condoms?|"
    r"abstinen\w*|steril\w*|vasectom\w*|menopaus\w*|post-?menopausal|pre-?menopausal|fertile|fertility|"
    r"egg|ova|oocytes?|reproductive|partner|birth control|intercourse|amenorrh\w*|hysterectom\w*|oophorectom\w*|"
    # What one sex is asked to agree to or do ("Male subjects must be willing to shave") binds that sex only.
    r"willing\w*|consent\w*|compl(?:y|iance)|shav\w*|facial hair|infertil\w*|testicular)\b",
    re.I,
)


def sex_scope(text: str) -> str | None:
    """The sex a sentence is addressed to ("A female participant is eligible if ...", "Men must agree to use
    condoms"), or None when the sentence is not scoped to one sex."""
    both = re.search(r"\b(?:men and women|women and men|males? and females?|females? and males?|both sexes|"
                     r"either sex|regardless of (?:sex|gender))\b", text, re.I)
    if both:
        return None
    hits = [sex for sex, pattern in _SEX_SCOPED.items() if pattern.search(text)]
    if len(hits) != 1:
        return None
    if not _SCOPE_CONTENT.search(text) and not re.search(r"\bif (?:female|male|a woman|a man)\b|\bis eligible\b",
                                                         text, re.I):
        return None
    return hits[0]


def own_sex_sentences(text: str, sex: str) -> tuple[list[str], bool]:
    """The criterion's sentences that concern a person of this sex, and whether any sentence was addressed to
    the other sex only ("Female patients ... must use contraception. Male patients must agree to use condoms")."""
    kept: list[str] = []
    other = False
    for sentence in criterion_sentences(text.strip()):
        scope = sex_scope(sentence)
        if scope is not None and scope != sex:
            other = True
        else:
            kept.append(sentence)
    return kept, other


_PERMISSIVE = re.compile(
    # (not in a relative clause: "subjects who are eligible but have not ...", "a product that is acceptable")
    r"(?<!\bwho )(?<!\bthat )(?<!\bwhich )"
    r"\b(?:(?:may|can|could|will)\s+(?:also\s+)?(?:be\s+)?(?:included|enrolled|eligible|allowed|permitted|accepted|"
    r"considered|participate|enter|join)|(?:is|are|will be|remain|also)\s+(?:also\s+)?(?:allowed|permitted|"
    r"acceptable|eligible|included|not excluded)|(?:is|are) not (?:an? )?(?:exclusion|excluded|contraindicat\w*)|"
    r"does not exclude|do not exclude|are acceptable|is acceptable|(?<!not )allowed\b(?! (?:only|if not)))",
    re.I,
)
_PROHIBITIVE = re.compile(
    r"\b(?:not (?:be )?(?:allowed|permitted|eligible|acceptable|included)|may not|must not|cannot|can't|should not|"
    r"ineligible|excluded|prohibited|disallowed)\b",
    re.I,
)
# "Both genders are eligible", "Adults aged 18 or over are eligible": who may join at all, not an allowance.
_WHOLE_POPULATION = re.compile(r"\b(?:genders?|sex(?:es)?|men|women|males?|females?|aged?|years?|adults?|children)\b",
                               re.I)
_REQUIRING = re.compile(r"\b(?:must|required?|requires|need(?:s|ed)? to|should|shall|have to|has to)\b", re.I)


# Where a sentence turns from a rule to an allowance: "... > Grade 1, however alopecia is acceptable",
# "... HIV with the following exception: individuals who are HIV positive are eligible", "... Note: ... may be
# included". Each side is classified on its own.
_CLAUSE_TURN = re.compile(r"(?:[,;]\s*|\s)(?=\b(?:however|but)\b)|(?<=\bexception:)\s|(?<=\bexceptions:)\s|"
                          r"\s(?=\bNote:)", re.I)


def permissive_sentences(text: str) -> tuple[list[str], list[str]]:
    """The criterion's sentences split into permissive ones ("Patients with treated brain metastases may be
    included") and the rest (requirements, prohibitions, plain descriptions)."""
    permissive: list[str] = []
    rest: list[str] = []
    pieces = [p for sentence in criterion_sentences(text.strip())
              for p in _CLAUSE_TURN.split(sentence) if p.strip()]
    for sentence in pieces:
        main = re.sub(r"\([^()]*\)|\[[^\[\]]*\]", " ", sentence)
        if (_PERMISSIVE.search(main) and not _PROHIBITIVE.search(main) and not _REQUIRING.search(main)
                and not _WHOLE_POPULATION.search(main)):
            permissive.append(sentence)
        else:
            rest.append(sentence)
    return permissive, rest


# --- PD-L1 expression --------------------------------------------------------------------------------

_PDL1_OPS = r"<=|>=|=>|≤|≥|<|>|less than|below|under|at most|at least|greater than|more than|above|over"
# A limit, two limits ("≥ 1% and < 50%", "< 1% or ≥ 50%") or a range ("1-49%", "between 1% and 49%").
_PDL1_CRITERION = re.compile(
    rf"\bPD-?L1\b[^.;]{{0,60}}?(?:(?P<op>{_PDL1_OPS}|of)\s*(?P<n>\d{{1,3}})\s*%"
    rf"(?:\s*(?P<join>and|to|but|or|,)\s*(?P<op2>{_PDL1_OPS})\s*(?P<n2>\d{{1,3}})\s*%)?"
    rf"|(?:between\s+)?(?P<lo>\d{{1,3}})\s*%?\s*(?:-|–|to|and)\s*(?P<hi>\d{{1,3}})\s*%)",
    re.I,
)
# A result may be a bound or a range ("PD-L1 <1%", "TPS 1-49%"): it stands for every value it allows.
_PDL1_NOTE = re.compile(
    r"\bPD-?L1\b[^.;0-9]{0,50}?(?P<op><=|>=|=>|≤|≥|<|>|less than|below|under|at most|at least|greater than|more than|"
    r"above|over)?\s*(?P<n>\d{1,3})(?:\s*%?\s*(?:-|–|to)\s*(?P<hi>\d{1,3}))?\s*%",
    re.I,
)
_PDL1_NOTE_NEGATIVE = re.compile(r"\bPD-?L1\b[^.;0-9]{0,30}?(?:negative|not expressed)", re.I)


def pd_l1(text: str, facts: PatientFacts) -> Reading | None:
    """A PD-L1 expression threshold ("PD-L1 TPS >= 50%"), two ("≥ 1% and < 50%", "< 1% or ≥ 50%") or a range,
    against the note's PD-L1 result.

    A result written as a bound or a range meets the threshold only when every value it allows does, and fails
    it only when none does."""
    m = _PDL1_CRITERION.search(text)
    if m is None:
        return None
    spans = (m.span(),)
    wanted: Callable[[float], bool]
    if m.group("lo"):
        low, high = sorted((float(m.group("lo")), float(m.group("hi"))))
        asked, limits, wanted = f"{low:g}-{high:g}%", (low, high), _between(low, high)
    else:
        op, limit = m.group("op").lower(), float(m.group("n"))
        asked, limits, wanted = f"{op} {limit:g}%", (limit, limit), _bound(op, limit, operator.ge)
        if m.group("op2"):
            op2, limit2 = m.group("op2").lower(), float(m.group("n2"))
            first, second = wanted, _bound(op2, limit2, operator.ge)
            either = m.group("join").lower() == "or"
            asked, limits = f"{asked} {'or' if either else 'and'} {op2} {limit2:g}%", (limit, limit2)
            wanted = (lambda x: first(x) or second(x)) if either else (lambda x: first(x) and second(x))
    for sid, sentence in _sentences(facts):
        seen = _PDL1_NOTE.search(sentence)
        if seen and seen.group("op"):
            n = float(seen.group("n"))
            shown, cuts, result = f"{seen.group('op').lower()} {n:g}%", (n, n), _bound(seen.group("op"), n, operator.eq)
        elif seen:
            low, high = sorted((float(seen.group("n")), float(seen.group("hi") or seen.group("n"))))
            shown = f"{low:g}-{high:g}%" if low < high else f"{low:g}%"
            cuts, result = (low, high), _between(low, high)
        elif _PDL1_NOTE_NEGATIVE.search(sentence):
            shown, cuts, result = "0%", (0.0, 0.0), _between(0.0, 0.0)
        else:
            continue
        ok = _settles(result, wanted, *limits, *cuts)
        if ok is None:
            return Reading(None, f"{facts.source} gives PD-L1 expression of {shown}, which does not settle the criterion's "
                           f"limit ({asked}).", facts.evidence([sid]), spans, True)
        return Reading(ok, f"{facts.source} gives PD-L1 expression of {shown}; the criterion asks for {asked}.",
                       facts.evidence([sid]), spans, False)
    return Reading(None, f"{facts.source} does not give a PD-L1 expression result.", (), spans, True)


# --- Graded scales (NYHA class, ECOG performance status) ------------------------------------------------


def grades_allowed(op: str, first: int, last: int, scale: range) -> set[int]:
    """The grades of a scale that "op first" allows ("> 1", "<= 2"); with no comparison, first to last."""
    test = comparison(op)
    if test is None:
        return set(range(min(first, last), max(first, last) + 1))
    return {g for g in scale if test(g, first)}


_ROMAN = {"i": 1, "ii": 2, "iii": 3, "iv": 4, "1": 1, "2": 2, "3": 3, "4": 4}
_NYHA_NAME = r"(?:NYHA|New York Heart Association)(?:\s*\(NYHA\))?(?:\s+(?:functional\s+)?(?:class(?:es)?|grade|stage))?"
_NYHA_CRITERION = re.compile(
    r"\b" + _NYHA_NAME + r"\s*(?P<op>>=|≥|>|<=|≤|<|at least)?\s*(?P<a>IV|III|II|I|[1-4])\b"
    r"(?:\s*(?:-|to|–|or|and|/|,)\s*(?P<b>IV|III|II|I|[1-4])\b)?(?:\s*(?:or|and)\s*(?P<c>IV|III|II|I|[1-4])\b)?",
    re.I,
)
_NYHA_NOTE = re.compile(r"\b" + _NYHA_NAME + r"\s*(?P<a>IV|III|II|I|[1-4])\b", re.I)


def nyha_class(text: str, facts: PatientFacts) -> Reading | None:
    """A New York Heart Association class requirement ("NYHA II-III", "NYHA class III or IV") against the note."""
    m = _NYHA_CRITERION.search(text)
    if m is None or re.search(r"\b(?:for|in) (?:patients|subjects|participants|those)\b[^.;]{0,12}$", text[: m.start()], re.I):
        return None  # "40% or lower for patients in NYHA II": the class only selects which limit applies
    if text[: m.start()].count("(") > text[: m.start()].count(")"):
        return None  # "chronic heart failure (NYHA II-III)": the class defines one listed item
    allowed: set[int] = set()
    found = [m] + [x for x in _NYHA_CRITERION.finditer(text, m.end())
                   if text[: x.start()].count("(") <= text[: x.start()].count(")")]
    for each in found:  # "NYHA Class II ... or NYHA Class III subjects ...": every class the line names
        first = _ROMAN[each.group("a").lower()]
        last = _ROMAN[(each.group("c") or each.group("b") or each.group("a")).lower()]
        op = (each.group("op") or "").replace("≥", ">=").replace("≤", "<=").lower()
        allowed |= set(grades_allowed(op, first, last, range(1, 5)))
    spans = tuple(each.span() for each in found)
    for sid, sentence in _sentences(facts):
        seen = _NYHA_NOTE.search(sentence)
        if seen:
            have = _ROMAN[seen.group("a").lower()]
            ok = have in allowed
            return Reading(ok, f"{facts.source} gives NYHA class {seen.group('a').upper()}, which is "
                           f"{'within' if ok else 'outside'} what the criterion names ({m.group(0).strip()}).",
                           facts.evidence([sid]), spans, False)
    heart_failure = [sid for sid, sentence in _sentences(facts) for c in find_concepts(sentence)
                     if c.key in ("heart_failure", "cardiomyopathy") and not c.absent
                     and assertion_at(sentence, c.start, c.end) == "affirmed"]
    if not heart_failure and facts.complete_record and 1 not in allowed:
        return Reading(False, f"{facts.source} records no heart failure, so the patient is in none of the NYHA classes "
                       f"the criterion names ({m.group(0).strip()}).", (), spans, False)
    return Reading(None, f"{facts.source} does not give a NYHA heart-failure class.", (), spans, True)
