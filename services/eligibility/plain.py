"""Plain language for guided mode: common criterion forms in everyday words, and questions a patient would ask.

:func:`plain_criterion` rewrites the forms that make up most of a criteria list -- ages, sex, performance status,
lab thresholds with units, prior therapy, pregnancy and birth control, consent boilerplate, "any other condition
the investigator judges…", measurable disease, life expectancy, confirmed diagnosis -- and otherwise returns the
trial's own sentence, tidied. :func:`topic_of` files a criterion under a topic, and :func:`patient_question`
turns an open criterion into the question a patient would put to their doctor, so questions can be grouped by
topic instead of quoting each line ("Do I meet this exclusion criterion: 'Prisoners'?").
The rules are general statements about how criteria are written, never about particular trials.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.eligibility.parser import CriterionKind, unescape_markdown

MAX_PLAIN = 400

# --- numbers, comparisons and units ----------------------------------------------------------------------

_NUM = r"(\d+(?:[.,]\d+)*)"
_GE = r"(?:≥|>=|=>|≧|greater than or equal to|more than or equal to|equal to or greater than|at least|of at least|" \
      r"no less than|not less than|minimum(?: of)?)"
_LE = r"(?:≤|<=|=<|≦|less than or equal to|equal to or less than|no more than|not more than|at most|" \
      r"not greater than|not exceeding|maximum(?: of)?|up to)"
_GT = r"(?:>|greater than|more than|above|over|exceeding)"
_LT = r"(?:<|less than|below|under)"
_UNIT = (r"(?:\s*(?:x|×|\*)\s*(?:10\s*(?:\^|e)?\s*\d+|ULN|the ULN|upper limit of normal|institutional ULN|"
         r"institutional upper limit of normal)(?:\s*/\s*(?:L|l|µL|uL|mm3|mm\^3))?"
         r"|\s*(?:g/dL|g/dl|g/L|mg/dL|mg/dl|mg/L|µmol/L|umol/L|mmol/L|mmol/mol|mL/min(?:/1\.73\s*m2|/1\.73\s*m\^?2)?|"
         r"ml/min(?:/1\.73\s*m2)?|/mm3|/mm\^3|/µL|/uL|/mcL|cells/mm3|cells/µL|x\s*10\^?9/L|×\s*10\^?9/L|"
         r"%|IU/L|U/L|ng/mL|pg/mL|mmHg|kg/m2|kg/m\^2|ms|msec|seconds?|mg|kg))?")

_COMPARE: tuple[tuple[str, str], ...] = ((_GE, "at least"), (_LE, "at most"), (_GT, "more than"), (_LT, "less than"))


def _words(text: str, table: tuple[tuple[str, str], ...] = _COMPARE) -> str:
    """Everyday words for a comparison (or, given _ANALYTES, an analyte); the text itself if none fits."""
    for pattern, words in table:
        if re.fullmatch(pattern, text.strip(), re.I):
            return words
    return text.strip()


def _unit(text: str) -> str:
    text = " ".join(text.split())
    if not text:
        return ""
    text = re.sub(r"(?i)(?:x|×|\*)\s*(?:the |institutional )?(?:ULN|upper limit of normal)",
                  "times the upper limit of normal", text)
    text = re.sub(r"(?i)(?:x|×|\*)\s*10\s*(?:\^|e)?\s*(\d+)", r"× 10^\1", text)
    return text if text.startswith("%") else " " + text


# --- the analytes a lab criterion names, in everyday words ---------------------------------------------------

_ANALYTES: tuple[tuple[str, str], ...] = (
    (r"absolute neutrophil count|\bANC\b|neutrophils?", "neutrophils (white blood cells that fight infection)"),
    (r"platelets?(?: count)?|\bPLT\b", "platelets (blood cells that help clotting)"),
    (r"h(?:a)?emoglobin|\bHgb\b|\bHb\b(?!A1c)", "haemoglobin (red blood cells)"),
    (r"white blood cells?|\bWBC\b|leukocytes?", "white blood cells"),
    (r"lymphocytes?", "lymphocytes (a kind of white blood cell)"),
    (r"creatinine clearance|\bCrCl\b|\bCLcr\b|e?GFR|glomerular filtration rate", "kidney filtering rate (eGFR or creatinine clearance)"),
    (r"(?:serum )?creatinine", "creatinine (a kidney blood test)"),
    (r"(?:total )?bilirubin", "bilirubin (a liver blood test)"),
    (r"\bAST\b|\bALT\b|\bSGOT\b|\bSGPT\b|aspartate aminotransferase|alanine aminotransferase|transaminases?",
     "liver enzymes (AST and ALT)"),
    (r"alkaline phosphatase|\bALP\b", "alkaline phosphatase (a liver and bone blood test)"),
    (r"albumin", "albumin (a blood protein)"),
    (r"\bINR\b|international normali[sz]ed ratio|prothrombin time|\bPTT\b|\baPTT\b", "blood clotting time (INR or PTT)"),
    (r"HbA1c|\bA1c\b|glycated h(?:a)?emoglobin|glycosylated h(?:a)?emoglobin", "HbA1c (average blood sugar over 2–3 months)"),
    (r"fasting (?:plasma )?glucose|blood glucose|\bFPG\b", "blood sugar"),
    (r"\bLVEF\b|(?:left ventricular )?ejection fraction", "heart pumping strength (ejection fraction)"),
    (r"\bQTc[FB]?\b|QT interval", "a heart rhythm measure on an ECG (QTc)"),
    (r"\bBMI\b|body mass index", "body mass index (weight for height)"),
    (r"\bFEV1\b", "lung function (FEV1)"),
    (r"\bPSA\b|prostate[- ]specific antigen", "PSA (a prostate blood test)"),
    (r"testosterone", "testosterone"),
    (r"\bTSH\b", "thyroid test (TSH)"),
    (r"potassium", "potassium"),
    (r"(?:systolic |diastolic )?blood pressure", "blood pressure"),
)
_LAB_VALUE = re.compile(
    rf"(?P<name>{'|'.join(p for p, _ in _ANALYTES)})[^.;:≥≤<>=\d]{{0,40}}?(?:\s*(?:level|count|value)s?)?\s*"
    rf"(?:(?P<op>{_GE}|{_LE}|{_GT}|{_LT})\s*(?P<num>{_NUM})(?P<unit>{_UNIT})"
    rf"|(?:between\s+|from\s+)?(?P<lo>{_NUM})(?P<lounit>{_UNIT})\s*(?:and|to|-|–)\s*(?P<hi>{_NUM})(?P<hiunit>{_UNIT}))",
    re.I,
)
# Which organs a line about their function names ("organ function" names all three).
_ORGANS = (("bone marrow", re.compile(r"\b(?:organ|bone marrow|marrow|h(?:a)?ematologic\w*)\b", re.I)),
           ("liver", re.compile(r"\b(?:organ|hepatic|liver)\b", re.I)),
           ("kidneys", re.compile(r"\b(?:organ|renal|kidneys?)\b", re.I)))
_ORGAN_FUNCTION = re.compile(r"\b(adequate|normal|sufficient|acceptable)\s+(?:\w+\s+){0,3}"
                             r"(organ|bone marrow|marrow|h(?:a)?ematologic\w*|renal|kidney|hepatic|liver|end[- ]organ)"
                             r"\b", re.I)


# Words a line of lab limits may carry besides the limits without saying anything more: framing ("adequate renal
# function", "patients with"), when the test is done, and units.  A line with any other word says something the
# lab phrases would leave out ("... for patients with Gilbert's syndrome", "... in the absence of liver metastases").
_LAB_FRAME = frozenset(
    "a an and or of the with to as at by for in on is are be will must have has than if any following both inclusive "
    "patient patients subject subjects participants who also adequate normal function functions organ organs bone "
    "marrow renal kidney hepatic liver hematologic haematologic hematological haematological laboratory lab labs "
    "values value level levels count counts serum plasma blood total defined follows test tests result results "
    "measured calculated estimated upper lower limit limits uln lln institutional times range within screening "
    "baseline visit days day weeks week months month prior enrollment enrolment registration randomization "
    "randomisation mg dl ml min mm hg mmhg l g mmol mol umol ng pg iu u kg m mcl ul per cells x msec ms".split())
_ANALYTE = re.compile("|".join(p for p, _ in _ANALYTES), re.I)


def _only_lab_limits(text: str) -> bool:
    """Whether the line says nothing but lab limits (framing, timing and units aside)."""
    rest = _ANALYTE.sub(" ", _LAB_VALUE.sub(" ", text))
    return all(word in _LAB_FRAME for word in re.findall(r"[a-z]+", rest.lower()))


def _lab_phrases(text: str) -> list[str]:
    phrases: list[str] = []
    for m in _LAB_VALUE.finditer(text):
        what = _words(m.group("name"), _ANALYTES)
        if m.group("op"):
            value = f"{_words(m.group('op'))} {m.group('num')}{_unit(m.group('unit') or '')}"
        else:
            value = (f"between {m.group('lo')}{_unit(m.group('lounit') or '')} and "
                     f"{m.group('hi')}{_unit(m.group('hiunit') or '')}")
        phrase = f"{what} {value}"
        if phrase not in phrases:
            phrases.append(phrase)
    return phrases


# --- performance status ----------------------------------------------------------------------------------

_ECOG_WORDS = {
    0: "fully active",
    1: "able to do light work but not hard physical work",
    2: "up and about more than half the day and able to look after yourself, but not able to work",
    3: "in a bed or chair more than half the day",
    4: "in a bed or chair all the time",
}
# A bound written after the number: "ECOG 2 or less", "Karnofsky 70 or higher".
_OR_BOUND = r"(?:\s*or\s+(?P<after>less|lower|below|under|more|higher|greater|above))?"
_AFTER_WORDS = {"less": "at most", "lower": "at most", "below": "at most", "under": "at most",
                "more": "at least", "higher": "at least", "greater": "at least", "above": "at least"}
_ECOG = re.compile(
    # "WHO" is the scale only in capitals and before its own words or a grade: not "who have 2", "WHO Group 2".
    r"(?:\bECOG\b|Eastern Cooperative Oncology Group|(?-i:\bWHO\b)(?=\W*(?:performance|PS\b|ECOG|status|scores?\b|[<>≤≥=]|[0-4](?!\d)))|"
    r"\bZubrod\b)[^0-9.;]{0,45}?"
    rf"(?:(?P<op>{_LE}|{_LT}|{_GE}|{_GT})\s*(?P<one>[0-4])(?!\d)|(?P<lo>[0-4])\s*(?:-|–|to|or|and|,)\s*(?P<hi>[0-4])(?!\d)"
    rf"(?:\s*(?:,\s*(?:or|and)?|or|and)\s*(?P<last>[0-4])(?!\d))?|(?P<single>[0-4])(?!\d){_OR_BOUND})", re.I)
_KARNOFSKY = re.compile(rf"(?:Karnofsky|Karnovsky|KPS|Lansky)[^.;\d]{{0,30}}?(?P<op>{_GE}|{_GT}|{_LE}|{_LT})?\s*"
                        rf"(?P<num>\d{{2,3}})(?!\d|\s*(?:years?|yrs?|months?)\b)\s*%?{_OR_BOUND}", re.I)


def _bound_words(m: re.Match[str]) -> str | None:
    """The comparison a performance-status match makes, in words ("at least" ...), or None for an exact value."""
    if m.group("op"):
        return _words(m.group("op"))
    return _AFTER_WORDS[m.group("after").lower()] if m.group("after") else None


def _ecog_phrase(text: str) -> str | None:
    m = _ECOG.search(text)
    if m:
        if m.group("lo") is not None:
            low, high = int(m.group("lo")), int(m.group("last") or m.group("hi"))
        else:
            n = int(m.group("one") or m.group("single"))
            words = _bound_words(m)
            if words in ("at least", "more than"):  # "ECOG ≥ 2" or "ECOG > 1" -- usually an exclusion
                low = n + 1 if words == "more than" else n
                return f"Daily activity score (ECOG) of {low} or more (at best: {_ECOG_WORDS.get(low, '')})."
            low, high = (0, n) if words == "at most" else (0, max(0, n - 1)) if words == "less than" else (n, n)
        if low == high:
            return f"Daily activity score (ECOG) of {low}: {_ECOG_WORDS[low]}."
        return (f"Daily activity score (ECOG) of {low} to {high}: from {_ECOG_WORDS[low]} to "
                f"{_ECOG_WORDS[high]}.")
    k = _KARNOFSKY.search(text)
    if k:
        n = int(k.group("num"))
        words = _bound_words(k) or "at least"
        # The scale goes in steps of 10: "more than 60" is 70 or better, "below 70" at best 60.
        if words == "less than":
            return f"Activity score (Karnofsky) below {n} (at best: {_karnofsky_words((n - 1) // 10 * 10)})."
        if words == "at most":
            return f"Activity score (Karnofsky) of at most {n} (at best: {_karnofsky_words(n)})."
        lowest = n // 10 * 10 + 10 if words == "more than" else n
        return f"Activity score (Karnofsky) of {words} {n}: {_karnofsky_words(lowest)}."
    return None


def _karnofsky_words(n: int) -> str:
    return ("normal activity with at most minor symptoms" if n >= 90 else
            "normal activity, with some effort" if n >= 80 else
            "looking after yourself, though not able to work or do normal activity" if n >= 70 else
            "needing help now and then but managing most of your own needs" if n >= 60 else
            "needing a lot of help and frequent medical care")


# --- ages and sex ---------------------------------------------------------------------------------------

_AGE_UNIT = r"(?:years?|yrs?|y)"
_AGE_RANGE = re.compile(
    rf"^(?:patients?|participants?|subjects?|men|women|males?|females?|adults?|men and women|women and men|"
    rf"males? and females?|males? or females?)?\s*(?:must be\s+|who are\s+)?"
    rf"(?:aged?|age[ds]?)?\s*(?:between\s+|from\s+)?(?P<lo>\d{{1,3}})\s*(?:{_AGE_UNIT})?\s*(?:-|–|to|and)\s*"
    rf"(?P<hi>\d{{1,3}})\s*{_AGE_UNIT}(?:\s*(?:of age|old))?(?:,?\s*inclusive)?\.?$", re.I)
_AGE_MIN = re.compile(
    rf"^(?:patients?|participants?|subjects?|men|women|males?|females?|adults?)?\s*(?:must be\s+)?(?:aged?|age[ds]?)?\s*"
    rf"(?:{_GE}|{_GT})?\s*(?P<n>\d{{1,3}})\s*(?:{_AGE_UNIT})?(?:\s*(?:of age|old))?\s*(?:or|and)\s*(?:older|over|above)\.?$"
    rf"|^(?:patients?|participants?|subjects?|adults?)?\s*(?:must be\s+)?(?:aged?|age[ds]?)?\s*(?:[:=]\s*)?"
    rf"(?P<op>{_GE}|{_GT})\s*(?P<m>\d{{1,3}})\s*{_AGE_UNIT}?(?:\s*(?:of age|old))?(?:\s+at\b.*)?\.?$", re.I)
_AGE_MAX = re.compile(rf"^(?:aged?|age[ds]?)\s*(?P<n>\d{{1,3}})\s*{_AGE_UNIT}\s*or\s*younger\.?$", re.I)
_AGE_UNDER = re.compile(rf"^(?:age\s*)?(?:younger than|under|less than|<)\s*(?P<n>\d{{1,3}})\s*{_AGE_UNIT}"
                        rf"(?:\s*(?:of age|old))?\.?$", re.I)
_SEX = re.compile(r"^(?:sex:\s*)?(?P<who>female|male|women|men|male or female|men or women|women or men|"
                  r"male and female|men and women|both sexes|all|any)\s*(?:participants|patients|subjects|only)?\.?$",
                  re.I)


def _age_phrase(text: str) -> str | None:
    t = text.strip()
    m = _AGE_RANGE.match(t)
    if m and int(m.group("lo")) < int(m.group("hi")):
        return f"Aged {m.group('lo')} to {m.group('hi')}."
    m = _AGE_MIN.match(t)
    if m:
        if m.group("n"):
            return f"Aged {m.group('n')} or older."
        n = int(m.group("m"))
        return f"Aged {n} or older." if _words(m.group("op")) == "at least" else f"Older than {n}."
    m = _AGE_MAX.match(t)
    if m:
        return f"Aged {m.group('n')} or younger."
    m = _AGE_UNDER.match(t)
    if m:
        return f"Younger than {m.group('n')}."
    return None


_ONE_SEX = {"female": "Women only.", "women": "Women only.", "male": "Men only.", "men": "Men only."}


def _sex_phrase(text: str) -> str | None:
    m = _SEX.match(text.strip())
    return _ONE_SEX.get(m.group("who").lower(), "People of any sex.") if m else None


# --- the other common forms -------------------------------------------------------------------------------

_CONSENT = re.compile(r"\b(consent|assent)\b", re.I)
_COMPLY = re.compile(r"\b(comply|compliance|adhere|willing(?:ness)? (?:and able )?to (?:attend|complete|follow|return)|"
                     r"able to (?:attend|complete|follow) (?:the )?(?:study|scheduled|all))\b", re.I)
_INVESTIGATOR = re.compile(r"\b(opinion of the (?:principal |treating )?investigator|investigator'?s? (?:opinion|judge?ment|"
                           r"discretion)|(?:investigator|physician) (?:judges|considers|deems|believes)|judged by the "
                           r"investigator|in the judge?ment of)\b", re.I)
_OTHER_THING = re.compile(r"^(?:\W*(?:any|other|another)\b|.{0,60}\b(?:any other|other (?:serious |significant |severe |"
                          r"concurrent |uncontrolled )?(?:medical|psychiatric|mental|psychological|conditions?|"
                          r"illness|disease|reasons?|factors?|findings?)))", re.I)
_PREGNANT = re.compile(r"\b(pregnan\w*|breast[- ]?feed\w*|lactat\w*|nursing)\b", re.I)
_CONTRACEPTION = re.compile(r"\b(contracept\w*|birth control|child[- ]?bearing potential|abstinen\w*|"
                            r"barrier method|sterili[sz]\w*)\b", re.I)
_PREGNANCY_TEST = re.compile(r"\bpregnancy test\b", re.I)
_PREGNANCY_WORD = re.compile(r"\bpregnan\w*", re.I)
_FEEDING_WORD = re.compile(r"\b(?:breast[- ]?feed\w*|lactat\w*|nursing)\b", re.I)
# A line that says nothing but being pregnant or breastfeeding ("Pregnant or lactating women").
_ONLY_PREGNANCY = re.compile(r"(?:(?:wom[ae]n|females?|patients?|subjects?|participants?|mothers?|who|are|is|currently|known|"
                             r"or|and|and/or|pregnan\w*|breast[- ]?feed\w*|lactat\w*|nursing)\W*)+", re.I)
_BIRTH_CONTROL = re.compile(r"\b(?:contracept\w*|birth control|abstinen\w*|barrier method)", re.I)
_AGREES_TO_CONTRACEPTION = re.compile(r"\b(?:agree\w*|willing\w*|consent\w*|commit\w*|must|should|required?|"
                                      r"practi[cs]\w*|use|using|uses)\b", re.I)
_REFUSES = re.compile(r"\b(?:not|no|unwilling\w*|unable|refus\w*|without|cannot|fail\w*|inability)\b", re.I)
_MEASURABLE = re.compile(r"\bmeasurable (?:disease|lesions?|tumou?rs?)\b|\bRECIST\b", re.I)
_LIFE = re.compile(rf"\blife expectancy\b(?P<before>[^.;\d]{{0,30}}?(?:{_GE}|{_GT}|of)?)\s*(?P<n>\d+)\s*"
                   r"(?P<unit>weeks?|months?|years?)(?P<or_less>\s*or (?:less|fewer|shorter))?", re.I)
_CONFIRMED = re.compile(r"^(?:patients? with |subjects? with |participants? with )?(?:a )?"
                        r"(?:histologically|cytologically|pathologically)(?:,? (?:and/or|or|and) "
                        r"(?:histologically|cytologically|pathologically))?\s+(?:confirmed|documented|proven)\s+"
                        r"(?:diagnosis of\s+)?(?P<what>.+?)\.?$", re.I)
_NAIVE = re.compile(r"\b(?P<what>[\w/-]+(?:\s+[\w/-]+){0,3})[- ]na(?:ï|i)ve\b", re.I)
_LINES = re.compile(r"\b(?:at least|≥|>=|minimum of)\s*(?P<n>one|two|three|1|2|3)\s+(?:prior\s+|previous\s+)?"
                    r"(?:lines?|regimens?)\b", re.I)
_NO_PRIOR = re.compile(r"^(?:no|without)\s+(?:prior|previous)\s+(?P<what>.+?)\.?$", re.I)
_PRIOR = re.compile(r"^(?:patients? |subjects? |participants? )?(?:who (?:have|has) )?(?:had |have had |having had |"
                    r"received |have received |has received )?(?:any )?(?:prior(?!\s+to\b)|previous(?:ly)?)\s+"
                    r"(?:treatment with|therapy with|treated with|received|exposure to|use of)?\s*(?P<what>.+?)\.?$",
                    re.I)
_PROGRESSED = re.compile(r"\b(?:progress\w*|relapsed?|recurr\w*|refractory)\b.{0,20}\b(?:on|after|following|to)\b\s+"
                         r"(?P<what>.+?)\.?$", re.I)
_COUNTS = {"one": 1, "two": 2, "three": 3}
_EXCEPT = re.compile(r"\b(?:unless|except|other than|excluding|with the exception of|apart from|aside from)\b", re.I)
_NEGATION = re.compile(r"\b(?:not|no|non|never|unable|unwilling\w*|cannot|without|lack|lacking|inability|refus\w*|poor|"
                       r"unlikely|unreliable|withdr\w*|denial|missing)\b|n't\b", re.I)
_PERMITS = re.compile(r"\b(?:allowed|permitted|acceptable|eligible|required|untreated)\b", re.I)
_FILLER = re.compile(r"^(?:(?:patients?|participants?|subjects?|individuals?)\s+(?:must\s+)?(?:have|with|who have)|"
                     r"must (?:have|be))\s+", re.I)


def _life_bound(m: re.Match[str]) -> str:
    """How a life-expectancy line bounds the time: "at least" unless it sets an upper limit ("≤ 6 months", "less
    than 3 months", "6 months or less").  "no more than" is checked before "more than", "no less than" before
    "less than"."""
    before = m.group("before")
    if m.group("or_less") or re.search(rf"{_LE}\s*$", before, re.I):
        return "at most"
    if not re.search(rf"{_GE}\s*$", before, re.I) and re.search(rf"(?:{_LT}|shorter than|fewer than)\s*$", before, re.I):
        return "less than"
    return "at least"


def _tidy(text: str) -> str:
    text = " ".join(unescape_markdown(text).split()).strip(" ;,")
    text = _FILLER.sub("", text)
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "?", "!", ")")) else text + "."


def _cap(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_PLAIN else text[: MAX_PLAIN - 1].rstrip() + "…"


def plain_criterion(text: str, kind: CriterionKind = "inclusion") -> str:
    """The criterion in everyday words (the trial's own sentence, tidied, when no common form fits)."""
    clean = " ".join(unescape_markdown(text).split())
    if not clean:
        return ""
    short = len(clean) <= 160
    if short and (phrase := _age_phrase(clean) or _sex_phrase(clean)):
        return phrase
    if _EXCEPT.search(clean):
        return _cap(_tidy(clean))  # a shorter wording would drop the exception ("ECOG 0-1 unless due to pain")
    negated = bool(_NEGATION.search(clean))
    if _INVESTIGATOR.search(clean) and _OTHER_THING.search(clean):
        return ("Any other health problem or situation that the study doctor thinks would make the trial unsafe "
                "for you or get in the way of the study.")
    # Consent and study visits: an inclusion that asks for them, an exclusion of whoever cannot; a line that
    # says anything else (an age, birth control, "unable to consent" as an inclusion) keeps its own words.
    plan_only = negated == (kind == "exclusion") and not re.search(r"\d", clean) and not _BIRTH_CONTROL.search(clean)
    if _CONSENT.search(clean) and len(clean) <= 260 and plan_only:
        if kind == "exclusion":
            return "Not being able or willing to agree in writing to take part."
        return "You are willing and able to agree in writing to take part, after the study has been explained to you."
    if _COMPLY.search(clean) and len(clean) <= 200 and plan_only:
        if kind == "exclusion":
            return "Not being able to come to the study visits or follow the study plan."
        return "You are able to come to the study visits and follow the study plan."
    birth_control = len(clean) <= 300 and _BIRTH_CONTROL.search(clean) and _AGREES_TO_CONTRACEPTION.search(clean)
    if _PREGNANCY_TEST.search(clean) and not _PREGNANT.search(_PREGNANCY_TEST.sub(" ", clean)) and not birth_control:
        # The test result the line names, not the opposite: "Positive pregnancy test" is not a negative one.
        result = "negative" if kind == "inclusion" else "positive"
        if not re.search(rf"\b{'positive' if result == 'negative' else 'negative'}\b", clean, re.I):
            return f"If you could become pregnant: a {result} pregnancy test before the start."
    if birth_control:
        # Only a line asking to use birth control, and said the way the line says it: an inclusion asks for it, an
        # exclusion keeps out whoever will not ("Use of hormonal contraceptives" or "Postmenopausal or surgically
        # sterilized women" ask something else, and keep their own words).
        refuses = bool(_REFUSES.search(clean))
        if kind == "inclusion" and not refuses:
            return ("If you or your partner could become pregnant: you agree to use reliable birth control during the "
                    "trial (and for a while after, as the study team will explain).")
        if kind == "exclusion" and refuses and not _PREGNANCY_TEST.search(clean):
            return ("If you or your partner could become pregnant: not agreeing to use reliable birth control during "
                    "the trial.")
    pregnant, feeding = bool(_PREGNANCY_WORD.search(clean)), bool(_FEEDING_WORD.search(clean))
    if (pregnant or feeding) and _ONLY_PREGNANCY.fullmatch(clean):
        # Only what the line names: "Pregnant women" is not about breastfeeding, and "Not pregnant" is not "pregnant".
        return "Being pregnant or breastfeeding." if pregnant and feeding else "Being pregnant." if pregnant else "Breastfeeding."
    performance = _ecog_phrase(clean)
    if performance and len(clean) <= 200:
        return performance
    labs = _lab_phrases(clean)
    if labs and _only_lab_limits(clean):
        head = "A test result showing" if len(labs) == 1 else "Test results showing"
        return _cap(f"{head}: {'; '.join(labs)}.")
    if _ORGAN_FUNCTION.search(clean) and len(clean) <= 200 and kind == "inclusion" and not re.search(r"\d", clean):
        # The organs the line names (all three for "organ function"); a line with its limits keeps them in its words.
        organs = [organ for organ, words in _ORGANS if words.search(clean)]
        listed = ", ".join(organs[:-1]) + " and " + organs[-1] if len(organs) > 1 else organs[0]
        verb = "works" if organs in (["bone marrow"], ["liver"]) else "work"
        return f"Blood tests showing that your {listed} {verb} well enough."
    life = _LIFE.search(clean)
    if life:
        return f"Your doctor expects you to live {_life_bound(life)} {life.group('n')} {life.group('unit').lower()}."
    if _MEASURABLE.search(clean) and len(clean) <= 200 and not negated:
        return "A tumour that can be measured on scans (the RECIST rules doctors use to track tumour size)."
    confirmed = _CONFIRMED.match(clean)
    if confirmed:
        return _cap(f"{_tidy(confirmed.group('what'))[:-1]}, confirmed by a lab test of tissue or cells (biopsy).")
    lines = _LINES.search(clean)
    if lines and not re.search(_LE, clean, re.I):  # "at least one ... but no more than three" keeps both bounds
        n = _COUNTS.get(lines.group("n").lower()) or int(lines.group("n"))
        return f"Already had at least {n} earlier treatment{'s' if n != 1 else ''} for this disease."
    naive = _NAIVE.search(clean)
    if naive and short and not negated:
        return _cap(f"Never had {naive.group('what').strip().lower()}.")
    # "Not progressed", "prior chemotherapy is allowed", "previously untreated": the short forms would say otherwise.
    if short and not _PERMITS.search(clean):
        no_prior = _NO_PRIOR.match(clean)
        if no_prior and not _NEGATION.search(no_prior.group("what")):
            return _cap(f"Never had {no_prior.group('what').strip()}.")
        if negated:
            return _cap(_tidy(clean))
        prior = _PRIOR.match(clean)
        if prior and prior.group("what"):
            return _cap(f"Had {prior.group('what').strip()} before.")
        progressed = _PROGRESSED.search(clean)
        if progressed:
            return _cap(f"The disease grew or came back during or after {progressed.group('what').strip()}.")
    return _cap(_tidy(clean))


# --- topics and patient questions ------------------------------------------------------------------------

TOPICS: tuple[str, ...] = (
    "Your diagnosis and tumour tests", "Treatments you have had", "Tests and records to bring", "Your daily activity",
    "Other health problems", "Pregnancy and birth control", "Taking part",
)
_TOPIC_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("Pregnancy and birth control", re.compile(_PREGNANT.pattern + "|" + _CONTRACEPTION.pattern, re.I)),
    ("Your daily activity", re.compile(r"\b(ECOG|Karnofsky|Karnovsky|KPS|Lansky|performance status|Zubrod)\b", re.I)),
    ("Taking part", re.compile(_CONSENT.pattern + "|" + _COMPLY.pattern + "|" + _INVESTIGATOR.pattern +
                               r"|\b(prison\w*|incarcerat\w*|detained|legal guardian|another (?:clinical )?(?:trial|study)|"
                               r"investigational (?:agent|drug|product)|life expectancy)\b", re.I)),
    ("Treatments you have had", re.compile(
        r"\b(prior(?!\s+to\b)|previous(?:ly)?|received|treated|na(?:ï|i)ve|lines? of|regimens?|chemotherap\w*|radiotherap\w*|"
        r"radiation|surger(?:y|ies)|immunotherap\w*|inhibitors?|vaccin\w*|transplant\w*|washout|progress\w*)\b",
        re.I)),
    ("Tests and records to bring", re.compile(
        _LAB_VALUE.pattern + "|" + _ORGAN_FUNCTION.pattern +
        r"|\b(labs?|laborator\w*|blood tests?|CT|MRI|PET|scans?|imaging|ECG|EKG|echocardiogra\w*|measurable|RECIST|"
        r"spirometr\w*|lung function)\b", re.I)),
    ("Your diagnosis and tumour tests", re.compile(
        r"\b(histolog\w*|cytolog\w*|patholog\w*|biops\w*|confirmed|diagnos\w*|stage|staging|metasta\w*|mutations?|"
        r"EGFR|ALK|ROS1|KRAS|BRAF|HER-?2|PD-?L1|BRCA\d?|biomarkers?|wild[- ]type|rearrange\w*|fusion|amplif\w*)\b",
        re.I)),
)


def topic_of(text: str) -> str:
    """The topic a criterion belongs to (one of TOPICS; "Other health problems" when nothing more specific fits)."""
    for topic, pattern in _TOPIC_PATTERNS:
        if pattern.search(text):
            return topic
    return "Other health problems"


def _quote(text: str, limit: int = 110) -> str:
    text = text.rstrip(".")
    text = text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
    keep = len(text) > 1 and text[1].isupper()  # an acronym such as "HIV" keeps its capital
    return f"“{text if keep else text[:1].lower() + text[1:]}”"


@dataclass(frozen=True)
class PatientQuestion:
    """A question for the doctor, under its topic."""

    topic: str
    text: str


def patient_question(text: str, kind: CriterionKind) -> PatientQuestion | None:
    """The question a patient would ask their doctor about an open criterion (None when it is not one for the
    doctor, such as consent or study visits)."""
    clean = " ".join(unescape_markdown(text).split())
    if not any(ch.isalnum() for ch in clean):
        return None  # an empty line or punctuation only: nothing to ask about
    if _age_phrase(clean) or _sex_phrase(clean):
        return None  # the rules judge ages and sex; nothing to ask
    plain = plain_criterion(text, kind)
    topic = topic_of(text)
    life = _LIFE.search(clean)
    if life:
        return PatientQuestion("Your diagnosis and tumour tests", "Would you say I meet the trial's rule on "
                               f"life expectancy ({life.group('n')} {life.group('unit').lower()})?")
    if topic == "Taking part":
        if _INVESTIGATOR.search(text):
            return PatientQuestion(topic, "Is there anything in my health that a study doctor might see as a reason "
                                          "to leave me out of a trial?")
        if re.search(r"another (?:clinical )?(?:trial|study)|investigational", text, re.I):
            return PatientQuestion(topic, "Would a study or trial medicine I am on now (or had recently) stop me "
                                          "from joining?")
        return None
    if topic == "Your daily activity":
        return PatientQuestion(topic, "How would you rate my day-to-day activity on the ECOG scale doctors use "
                                      "for trials?")
    if topic == "Pregnancy and birth control":
        return PatientQuestion(topic, "Do the trial's pregnancy and birth-control rules apply to me, and what "
                                      "would I need to do?")
    if topic == "Tests and records to bring":
        if _LAB_VALUE.search(text) or _ORGAN_FUNCTION.search(text):
            return PatientQuestion(topic, "Are my recent blood test results within the trial's limits, and can I "
                                          "have copies to bring?")
        if _MEASURABLE.search(text):
            return PatientQuestion(topic, "Can my tumour be measured on scans the way trials need (RECIST)?")
        return PatientQuestion(topic, "Which test or scan reports should I bring, and are they recent enough?")
    if topic == "Treatments you have had":
        if kind == "exclusion":
            return PatientQuestion(topic, f"Have I had any treatment this trial does not allow — {_quote(plain)}?")
        return PatientQuestion(topic, f"Does my treatment so far match what this trial asks for — {_quote(plain)}?")
    if topic == "Your diagnosis and tumour tests":
        if kind == "exclusion":
            return PatientQuestion(topic, f"Do my scans or reports show anything this trial leaves out — {_quote(plain)}?")
        return PatientQuestion(topic, f"Do my diagnosis and test reports show what this trial asks for — {_quote(plain)}?")
    if kind == "exclusion":
        return PatientQuestion(topic, f"Could I have anything this trial leaves out — {_quote(plain)}?")
    return PatientQuestion(topic, f"Does this describe me — {_quote(plain)}?")


