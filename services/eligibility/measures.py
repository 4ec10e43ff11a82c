"""Lab and measure cut-offs read from data/eligibility/measures.csv and compared with the patient's own value.

The file lists each measure once: its names, standard unit, unit conversions and plausible range.  A criterion's
limit ("eGFR < 30 mL/min", "HbA1c 7.5-10.0% (58-86 mmol/mol)", "platelets >= 100 x 10^9/L") and the patient's
value ("eGFR 42" typed in the form, an uploaded lab, a note's "BMI 31") are read with the same names and units,
converted to the standard unit and compared.  A limit in multiples of the upper limit of normal (x ULN) is only
compared with a value given in the same multiples.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path

from services.eligibility import cues
from services.eligibility.patient import LabValue, PatientFacts
from services.eligibility.statements import SYMBOLS, age_text, comparison
from services.healthdata import BY_KEY, normalise_unit, shown_unit, unit_rules

MEASURES_CSV = Path(__file__).resolve().parents[2] / "data" / "eligibility" / "measures.csv"
ULN = "xuln"


@dataclass(frozen=True)
class MeasureRow:
    """One row of measures.csv."""

    key: str
    name: str
    names: tuple[str, ...]
    unit: str
    units: dict[str, tuple[float, float]]  # normalised unit -> (factor, offset) to the standard unit
    low: float
    high: float
    lab_keys: tuple[str, ...]
    unit_needed: bool  # a limit without a unit is not read (a weight may be in kg or lb)
    pair: re.Pattern[str] | None  # a value written as a pair ("BP 150/95"), this measure at pair_position
    pair_position: int
    source: str
    pattern: re.Pattern[str]

    def to_standard(self, value: float, unit: str) -> float | None:
        """The value in the standard unit; a unit left out is guessed from the size (10^9/L vs /mm3, % vs
        mmol/mol); None for a unit this measure does not have."""
        u = self.unit_read(value, unit)
        if u is None:
            return None
        if not u:
            return value
        factor, offset = self.units[u]
        # rounded: 98.6 °F is 37 °C, not 37.0000002 (which would be "> 37")
        return round(value * factor + offset, 6)

    def unit_read(self, value: float, unit: str) -> str | None:
        """The unit the value is read in (normalised; "" the standard unit): as written, or for a number
        written without one the unit its size fits; None when no unit of this measure fits."""
        u = _unit_key(unit)
        if u:
            return u if u in self.units else None
        if self.unit_needed:
            return None
        if not self.low <= value <= self.high:
            for candidate, (factor, offset) in self.units.items():
                if candidate and self.low <= round(value * factor + offset, 6) <= self.high:
                    return candidate
        return "" if self.low <= value <= self.high or "" in self.units else None


def _unit_key(unit: str) -> str:
    u = normalise_unit(unit or "").replace("x109/l", "109/l").rstrip(".")
    u = re.sub(r"^ml/min/1[.,]7\d*(?:m2|m|m2bsa|m3)?$", "ml/min/1.73m2", u)
    u = re.sub(r"^(?:kg|kilograms?)(?:/|per)?(?:m-2|m2|squaremet(?:er|re)|met(?:er|re)s?squared?)$", "kg/m2",
               u)
    if re.fullmatch(
        r"x?(?:times)?(?:of)?(?:the)?(?:institutional|laboratory|site)?(?:uln|"
        r"upper(?:limits?)?(?:of)?(?:the)?normal(?:limits?|values?|range)?|normal|xnormal)",
        u,
    ):
        return ULN
    return u


def _name_pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    # Short all-capital abbreviations (ALT, AST, ANC, GFR) are matched in capitals only: "alt" and "ast" are words.
    parts = [
        (f"(?-i:{re.escape(n)})" if n.isupper() and len(n) <= 5 else re.escape(n).replace(r"\ ", r"\s+"))
        for n in sorted(names, key=len, reverse=True)
    ]
    return re.compile(r"(?<![\w-])(?:" + "|".join(parts) + r")(?![\w-])", re.I)


def _pair_pattern(names: str) -> re.Pattern[str] | None:
    """The pair's names followed by two numbers, "BP 150/95 mmHg" (None for a measure written alone)."""
    found = tuple(n.strip() for n in names.split("|") if n.strip())
    if not found:
        return None
    two_numbers = r"[^.;0-9]{0,20}?(?P<a>\d{2,3})\s*/\s*(?P<b>\d{2,3})(?!\d)"
    return re.compile(_name_pattern(found).pattern + two_numbers, re.I)


@lru_cache(maxsize=1)
def measure_rows() -> tuple[MeasureRow, ...]:
    """The rows of measures.csv (read once)."""
    rows = []
    with MEASURES_CSV.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            units = unit_rules(row["units"], _unit_key)
            names = tuple(n.strip() for n in row["names"].split("|") if n.strip())
            rows.append(
                MeasureRow(
                    row["key"],
                    row["name"],
                    names,
                    row["unit"],
                    units,
                    float(row["low"]),
                    float(row["high"]),
                    tuple(k for k in row["lab_keys"].split("|") if k),
                    row["unit_needed"] == "yes",
                    _pair_pattern(row["pair_names"]),
                    int(row["pair_position"] or 0),
                    row["source"],
                    _name_pattern(names),
                )
            )
    return tuple(rows)


_OPS = "|".join(
    re.escape(op) for op in sorted(SYMBOLS, key=len, reverse=True) if op not in ("equal to", "over")
)
_OP = rf"(?P<op>{_OPS}|over(?!\s+(?:the|a|\d+\s*(?:hours?|days?|weeks?|months?|years?))))"
_NUM = r"\d{1,3}(?:,\d{3})+|\d+(?:[.,]\d+)?"
_UNITS = (
    r"(?:(?:(?:x|×|times)\s*(?:of\s+)?(?:the\s+)?)?(?:institutional\s+|laboratory\s+|site\s+)?(?:uln\b|"
    r"upper\s+(?:limits?\s+)?(?:of\s+)?(?:the\s+)?normal(?:\s+(?:limits?|values?|range))?)|"
    r"(?:x|×)\s*10\^?\s*[39]\s*/\s*(?:l|µl|ul|mm\^?3)|/mm\^?3|/µl|/ul|cells/mm\^?3|"
    r"mg/dl|mg/l|ng/ml|µg/l|ug/l|μg/l|pmol/l|µmol/l|umol/l|μmol/l|mmol/mol|mmol/l|ml/s|"
    r"mls?/min(?:/1[.,]7\d*\s*(?:m2|m²|m\^2|m)?(?:\s*bsa)?)?|"
    r"mm\s*hg\b|kg\s*/?\s*m(?:-2|2|²|\^2)|"
    r"kilograms?\s*(?:/|per)\s*(?:square\s+met(?:er|re)|met(?:er|re)s?\s+squared?)|"
    r"iu/l|u/l|g\s*/\s*dl|gm\s*/\s*dl|g\s*/\s*l\b|%|kgs?\b|kilograms?\b|lbs?\b|pounds\b|"
    r"grams?\s+per\s+decilit(?:er|re)|g\b|grams\b|"
    r"°\s?[cf]\b|degrees?\s+(?:celsius|fahrenheit|c|f)\b|celsius\b|fahrenheit\b|[cf]\b)"
)
# Words between a name and its bound; a closing bracket ends them ("hypertension [>140 systolic], hypotension
# [<90": the bound is not the systolic one).
_FILLER = r"(?:\s*\([^()]{0,40}\))?[^.;0-9<>≤≥=)\]\[]{0,45}?"
# A number followed by a time word is a duration ("LDL apheresis < 2 months ago"), not a level; one
# followed by "/N" is a pair ("SBP/DBP < 90/50"), one followed by "th" or "percentile" a rank.
_NOT_TIME = (r"(?![.,]?\d)(?!\s*/\s*\d)(?!(?:th|st|nd|rd)\b|\s*percentile)"
             r"(?!\s*(?:hours?|hrs?|days?|weeks?|wks?|months?|mos?|years?|yrs?)\b)")
_BOUND = re.compile(_FILLER + _OP + rf"\s*(?:to\s+)?(?P<n>{_NUM})\s*(?P<u>{_UNITS})?" + _NOT_TIME, re.I)
# Words before a bound that hand it to the next name: "BP >160 mm Hg systolic or >95 mm Hg diastolic",
# "between 100 and 140 mmHg systolic, inclusive, and 50 and 90 mmHg diastolic".
_JOINED = re.compile(r"\b(?:and|or)\s*$", re.I)
# "N or higher" after another comparison word is not read ("lower thatn 60mmHg or higher than 100").
_COMPARISON_WORD = re.compile(r"\b(?:lower|higher|less|more|greater|above|below|under|over|than)\b", re.I)
_SECOND = re.compile(
    r"\s*(?P<join>,|and|but|or|to|-)\s*(?:and\s+)?" + _OP + rf"\s*(?P<n>{_NUM})\s*(?P<u>{_UNITS})?"
    + _NOT_TIME,
    re.I,
)
_RANGE = re.compile(
    r"(?:\s*\([^()]{0,40}\))?[^.;0-9<>≤≥)\]\[]{0,45}?(?:between\s+|of\s+|from\s+)?(?P<a>"
    + _NUM
    + r")\s*(?P<ua>"
    + _UNITS
    + r")?\s*(?:-|to|and)\s*(?P<b>"
    + _NUM
    + r")\s*(?P<u>"
    + _UNITS
    + ")?",
    re.I,
)
_OR_TAIL = re.compile(
    _FILLER + rf"(?P<n>{_NUM})\s*(?P<u>{_UNITS})?\s*or\s+(?P<dir>lower|less|below|under|higher|"
    r"more|greater|above|over)\b",
    re.I,
)
_VALUE = re.compile(
    r"^\s*(?:\([^()]{0,20}\))?\s*(?:(?:level|value|result|was|is|of|at|up\s+to|=|:|-)\s*){0,3}"
    rf"(?P<n>{_NUM})\s*(?P<u>{_UNITS})?",
    re.I,
)


def _number(raw: str) -> float:
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+", raw):
        return float(raw.replace(",", ""))
    return float(raw.replace(",", "."))


@dataclass(frozen=True)
class Limit:
    """A criterion's cut-off on one measure: bounds (symbol, number in the standard unit or x ULN), as written."""

    row: MeasureRow
    bounds: tuple[tuple[str, float], ...]
    uln: bool
    written: str
    span: tuple[int, int]
    name_start: int
    raw: tuple[tuple[str, str, str], ...] = ()  # (symbol, number, unit) as the trial writes them
    either: bool = False  # two bounds joined by "or" ("< 85 or > 140 mmHg"): one of them is enough
    sex: str | None = None  # a limit for one sex only ("≥ 11.5 g/dL for women"): "female" or "male"

    def holds(self, value: float) -> bool | None:
        """Whether the value lies inside the limit: every bound; one of them when "or" joins bounds facing
        apart ("< 85 or > 140": outside a range). For "or" between bounds facing one way ("> 100,000 or >
        75,000 if marrow is involved") the second is another way to qualify: meeting only it is unknown."""
        met = [(comparison(op) or (lambda a, b: a == b))(value, bound) for op, bound in self.bounds]
        if not self.either or all(met):
            return all(met)
        facing_apart = len({op in ("<", "≤") for op, _ in self.bounds}) == 2
        return any(met) if facing_apart else (None if any(met) else False)

    @property
    def joiner(self) -> str:
        """How the bounds are written together: " and ", or " or " for either bound."""
        return " or " if self.either else " and "

    def shown(self) -> str:
        """The bounds in symbols and standard-unit numbers: "≥ 90 and ≤ 140", "< 85 or > 140"."""
        return self.joiner.join(f"{op} {_fmt(b)}" for op, b in self.bounds)


_Bounds = list[tuple[str, float, str]]


def _bounds_at(row: MeasureRow, text: str, start: int) -> tuple[_Bounds, int, bool] | None:
    """The bounds written after a measure's name: (symbol, number, unit written), where they end and whether
    they are joined by "or"."""
    rest = text[start:]
    found: _Bounds = []
    m = _BOUND.match(rest)
    if m and _JOINED.search(rest, 0, m.start("op")):
        return None
    if m:
        found.append((SYMBOLS[m.group("op").lower()], _number(m.group("n")), m.group("u") or ""))
        second = _SECOND.match(rest, m.end())
        if second:
            found.append(
                (
                    SYMBOLS[second.group("op").lower()],
                    _number(second.group("n")),
                    second.group("u") or m.group("u") or "",
                )
            )
            return found, start + second.end(), second.group("join").lower() == "or"
        return found, start + m.end(), False
    r = _RANGE.match(rest)
    if r and not _JOINED.search(rest, 0, r.start("a")) and _number(r.group("a")) < _number(r.group("b")):
        unit = r.group("u") or r.group("ua") or ""
        return [
            ("≥", _number(r.group("a")), r.group("ua") or unit),
            ("≤", _number(r.group("b")), unit),
        ], start + r.end(), False
    t = _OR_TAIL.match(rest)
    if t and not _JOINED.search(rest, 0, t.start("n")) and not _COMPARISON_WORD.search(rest, 0, t.start("n")):
        low = t.group("dir").lower() in ("lower", "less", "below", "under")
        return [("≤" if low else "≥", _number(t.group("n")), t.group("u") or "")], start + t.end(), False
    return None


CKD_STAGES_CSV = MEASURES_CSV.with_name("ckd_stages.csv")
# "CKD stage 4 or greater", "stage 3-5 chronic kidney disease", "CKD stage ≥ 4": an eGFR range by its stage.
_STAGE = re.compile(
    r"(?:\b(?:CKD|chronic kidney disease)\s*(?:\(CKD\)\s*)?(?:stage|G)\s*(?:>=|≥)?\s*(?P<a>[1-5])[ab]?"
    r"(?P<tail>\s*(?:or (?:greater|higher|above|more|worse)|and (?:above|higher)|\+|(?:-|to|or)\s*(?P<b>[1-5])))?"
    r"|\bstages?\s*(?P<a2>[1-5])(?:\s*(?:-|to|or)\s*(?P<b2>[1-5]))?\s+(?:CKD|chronic kidney disease))\b",
    re.I,
)


@lru_cache(maxsize=1)
def ckd_stages() -> dict[int, tuple[float, float]]:
    """Each chronic-kidney-disease stage's eGFR range, low included and high excluded (ckd_stages.csv)."""
    with CKD_STAGES_CSV.open(encoding="utf-8") as handle:
        return {
            int(r["stage"]): (float(r["egfr_low"] or 0), float(r["egfr_high"] or 1e9))
            for r in csv.DictReader(handle)
        }


def _stage_limits(text: str) -> list[Limit]:
    egfr = next(r for r in measure_rows() if r.key == "egfr")
    limits = []
    for m in _STAGE.finditer(text):
        first = int(m.group("a") or m.group("a2"))
        last = int(
            m.group("b")
            or m.group("b2")
            or (5 if m.group("tail") or ">" in m.group(0) or "≥" in m.group(0) else first)
        )
        if last < first:
            continue
        bounds: list[tuple[str, float]] = [("<", ckd_stages()[first][1])] if first > 1 else []
        if ckd_stages()[last][0] > 0:
            bounds.append(("≥", ckd_stages()[last][0]))
        limits.append(Limit(egfr, tuple(bounds), False, m.group(0).strip(), m.span(), m.start()))
    return limits


# Other spellings of a comparison, each replaced by one of the same length so positions stay the same.
COMPARISON_WORDS_CSV = MEASURES_CSV.with_name("comparison_words.csv")


@lru_cache(maxsize=1)
def comparison_words() -> dict[str, str]:
    """Comparisons written in words ("no less than", "equal to or greater than") -> their symbol
    (comparison_words.csv)."""
    with COMPARISON_WORDS_CSV.open(encoding="utf-8") as handle:
        return {" ".join(r["words"].lower().split()): r["symbol"] for r in csv.DictReader(handle)}


@lru_cache(maxsize=1)
def _spellings() -> tuple[tuple[re.Pattern[str], str | None], ...]:
    """Other spellings of a comparison, each replaced by one of the same length so positions stay the same
    (None: the symbol of the words found, from comparison_words.csv)."""
    rows = comparison_words()
    longest_first = sorted(rows, key=len, reverse=True)
    words = "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in longest_first if w[0].isalpha())
    # Typed signs (">/=", "=<"): any spaces may stand between their characters.
    signs = tuple((re.compile(r"\s*".join(re.escape(c) for c in w if not c.isspace())), rows[w])
                  for w in longest_first if not w[0].isalpha())
    return (
        (re.compile(r"\b(?:" + words + r")\b", re.I), None),
        *signs,
        (re.compile(r"(?<=\d)\s*~\s*(?=\d)"), "-"),  # a range written with a tilde, "20~35"
    )


# A comparison in words with its symbol in brackets, "greater than or equal to (>=) 27.0": the symbol says it.
_WORDS_THEN_SYMBOL = re.compile(
    r"\b(?:(?:greater|more|higher|less|lower)\s+than(?:\s+or\s+equal(?:\s+to)?)?|equal\s+to)\s*"
    r"\(\s*(>=|<=|>|<|≥|≤)\s*\)", re.I)


def _respelled(symbol: str | None, found: re.Match[str]) -> str:
    """The symbol for what was found (that of the words when None), padded to its length."""
    written = found.group(0)
    return (symbol or comparison_words()[" ".join(written.lower().split())]).ljust(len(written))


def _spelled(text: str) -> str:
    text = _WORDS_THEN_SYMBOL.sub(lambda m: m.group(1).ljust(len(m.group(0))), text)
    for pattern, symbol in _spellings():
        text = pattern.sub(partial(_respelled, symbol), text)
    return text


LIMIT_GROUPS_CSV = MEASURES_CSV.with_name("limit_groups.csv")


@lru_cache(maxsize=1)
def limit_groups() -> dict[str, str]:
    """Words that give a limit to one sex ("for women", "in males"): word -> sex (limit_groups.csv)."""
    with LIMIT_GROUPS_CSV.open(encoding="utf-8") as handle:
        return {r["word"].lower(): r["sex"] for r in csv.DictReader(handle)}


@lru_cache(maxsize=1)
def _group_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    words = "|".join(re.escape(w) for w in sorted(limit_groups(), key=len, reverse=True))
    after = re.compile(
        rf"\s*(?:\([^()]{{0,40}}\)\s*)?,?\s*(?:for|in|among)\s+(?:[a-z-]+\s+){{0,4}}?(?P<g>{words})\b", re.I)
    return after, re.compile(rf"\b(?P<g>{words})\b", re.I)


def _limit_sex(text: str, name_end: int, end: int) -> str | None:
    """The sex a limit is given for: named after it ("≥ 11.5 g/dL for women") or between the measure's name
    and its number ("Hemoglobin: women: ≥ 11.5 g/dL")."""
    after, word = _group_patterns()
    number = re.search(r"\d", text[name_end:end])
    before_number = name_end + (number.start() if number else 0)
    found = after.match(text, end) or word.search(text, name_end, before_number)
    return limit_groups()[found.group("g").lower()] if found else None


# Names joined before one limit share it: "AST and ALT <= 2.5 x ULN", "SBP/DBP".
_SHARED = re.compile(r"[\s,/&]*(?:(?:and|or|and/or)[\s,/&]*)?", re.I)


def limits_in(text: str) -> list[Limit]:
    """Every cut-off the criterion sets on a measure of measures.csv (limits in a unit it cannot convert are
    left out, so the line stays to the other rules)."""
    original, text = text, _spelled(text)  # the same length: positions in one are positions in the other
    limits = _stage_limits(text)
    # A name inside a longer name of another measure belongs to that one ("creatinine clearance").
    names = [(m.span(), row) for row in measure_rows() for m in row.pattern.finditer(text)]
    for row in measure_rows():
        for name in row.pattern.finditer(text):
            if any(lim.row is row and lim.span[0] <= name.start() < lim.span[1] for lim in limits):
                continue
            if any(
                other is not row
                and a <= name.start()
                and name.end() <= b
                and b - a > name.end() - name.start()
                for (a, b), other in names
            ):
                continue
            read = _bounds_at(row, text, name.end())
            if read is None:
                continue
            raw, end, either = read
            if any(other is not row and name.end() <= a < end and not _SHARED.fullmatch(text, name.end(), a)
                   for (a, _), other in names):
                continue  # another measure is named before the number: "systolic dysfunction (LVEF < 55%)"
            uln = any(_unit_key(u) == ULN for _, _, u in raw)
            bounds = []
            for symbol, number, unit in raw:
                std = number if uln else row.to_standard(number, unit)
                if std is None or not (uln or row.low <= std <= row.high):
                    break  # a unit it cannot convert, or a limit no one could have ("> 40 mL/sec"): not a parse
                bounds.append((symbol, std))
            else:
                unit_written = next((u for _, _, u in reversed(raw) if u), "")
                limits.append(
                    Limit(
                        row,
                        tuple(bounds),
                        uln,
                        " ".join(original[name.start() : end].split()),
                        (name.start(), end),
                        name.start(),
                        tuple((s, f"{n:g}" if n < 1000 else f"{n:,.0f}", unit_written) for s, n, _ in raw),
                        either,
                        _limit_sex(text, name.end(), end),
                    )
                )
                break
    return sorted(limits, key=lambda lim: lim.span)


@dataclass(frozen=True)
class PatientValue:
    """The patient's value of a measure in its standard unit (or in x ULN), and where it was read."""

    value: float
    uln: bool
    shown: str
    evidence: tuple[int, ...] = ()
    lab: LabValue | None = None


def patient_value(row: MeasureRow, facts: PatientFacts) -> PatientValue | None:
    """The latest uploaded lab of this measure, else the value the form or note states ("eGFR 42", "BMI 31")."""
    labs: list[LabValue] = [v for v in facts.labs if v.key in row.lab_keys]
    if labs:
        lab = max(labs, key=lambda v: v.date)
        std = row.to_standard(lab.value, lab.unit)
        if std is not None and row.low <= std <= row.high:
            return PatientValue(
                std, False, f"uploaded {row.names[0]} of {lab.value:g} {lab.unit} on {lab.date}", lab=lab
            )
    for sentence in facts.sentences:
        pair = row.pair.search(sentence.text) if row.pair is not None else None
        if pair is not None:
            number = pair.group("a" if row.pair_position == 1 else "b")
            std = row.to_standard(float(number), "")
            if std is not None and row.low <= std <= row.high:
                return PatientValue(std, False, pair.group(0), facts.evidence([sentence.id]))
        for name in row.pattern.finditer(sentence.text):
            m = _VALUE.match(sentence.text[name.end() :])
            if m is None:
                continue
            unit = m.group("u") or ""
            written = f"{name.group(0)} {m.group('n')}{(' ' + unit) if unit else ''}"
            if _unit_key(unit) == ULN:
                return PatientValue(_number(m.group("n")), True, written, facts.evidence([sentence.id]))
            std = row.to_standard(_number(m.group("n")), unit)
            if std is not None and row.low <= std <= row.high:
                return PatientValue(std, False, written, facts.evidence([sentence.id]))
    return None


# A note saying there is no fever, and a trial for healthy volunteers (data/eligibility/state_cues.csv).
STATE_CUES = cues.CueFile(MEASURES_CSV.with_name("state_cues.csv"), ("healthy", "afebrile"))
_AFEBRILE = STATE_CUES.compile("afebrile")
FEVER_FROM_C = 37.5  # the lowest fever threshold an "afebrile" note settles
WEIGHT_FLOOR_CSV = MEASURES_CSV.with_name("weight_floor_by_age.csv")


@lru_cache(maxsize=1)
def _weight_floors() -> tuple[tuple[float, float], ...]:
    with WEIGHT_FLOOR_CSV.open(encoding="utf-8") as handle:
        return tuple((float(r["age_months"]) / 12, float(r["kg"])) for r in csv.DictReader(handle))


def weight_floor(age: float | None) -> float | None:
    """The least a person of this age (in years) weighs, from weight_floor_by_age.csv (None when unknown)."""
    if age is None:
        return None
    return max((kg for years, kg in _weight_floors() if years <= age), default=None)


def _without_value(limit: Limit, facts: PatientFacts, kind: str) -> tuple[bool, str, tuple[int, ...]] | None:
    """What settles a limit without the patient's value: a note saying there is no fever settles a fever
    threshold; the least weight at the patient's age (WHO -3 SD) settles a weight limit below it, read only in
    the patient's favour, as a rare child may weigh less."""
    signs = [op for op, _ in limit.bounds]
    if limit.row.key == "temperature" and all(b >= FEVER_FROM_C for _, b in limit.bounds):
        ids = [s.id for s in facts.sentences if _AFEBRILE.search(s.text)]
        if ids:
            below = signs[0] in ("<", "≤")
            return below, (f"{facts.source} says there is no fever, so the temperature is below the limit "
                           f"({limit.written})."), facts.evidence(ids)
    floor = weight_floor(facts.age) if limit.row.key == "weight" else None
    above = all(sign in (">", "≥") for sign in signs)
    if floor is not None and all(floor >= b for _, b in limit.bounds) and above == (kind == "inclusion"):
        reason = (f"No weight is recorded, but at {age_text(facts.age or 0)} of age a person weighs "
                  f"{floor:g} kg or more (WHO growth standards, -3 SD), above the limit ({limit.written}).")
        return above, reason, facts.evidence(facts.age_evidence)
    return None


def _fmt(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def judge(limit: Limit, facts: PatientFacts, kind: str) -> tuple[bool | None, str, tuple[int, ...]]:
    """Whether the patient's value lies inside the limit (None when unknown or not comparable) and the reason."""
    row = limit.row
    if limit.sex is not None and facts.sex != limit.sex:  # the caller leaves out a limit for the other sex
        group = "women" if limit.sex == "female" else "men"
        source = facts.source.lower()
        return None, f"The limit ({limit.written}) is for {group}; {source} does not give the sex.", ()
    value = patient_value(row, facts)
    same = (
        " Creatinine clearance and eGFR are read as the same kidney-function measure, in mL/min."
        if row.key == "egfr"
        else ""
    )
    if value is None:
        settled = _without_value(limit, facts, kind)
        if settled is not None:
            return settled
        return (
            None,
            (f"The trial asks for {limit.written}; {facts.source.lower()} gives no {row.name} value."),
            (),
        )
    if value.uln != limit.uln:
        return (
            None,
            (
                f"The trial's limit ({limit.written}) is a multiple of the upper limit of normal at its own "
                f"laboratory, which is not known here, so {facts.source.lower()}'s {value.shown} cannot be "
                "checked against it. Ask the trial team."
                if limit.uln
                else f"The limit ({limit.written}) is a measured value and {facts.source.lower()}'s "
                f"{value.shown} a multiple of the laboratory's upper limit of normal, so they cannot be "
                "compared here; ask the trial team."
            ),
            value.evidence,
        )
    inside = limit.holds(value.value)
    if inside is None:
        return (None, f"{facts.source}: {value.shown} meets only the line's other way to qualify "
                f'("{limit.written}"), which depends on a condition the line names; ask the trial team.',
                value.evidence)
    unit = "× ULN" if value.uln else row.unit
    shown = limit.shown()
    where = "in the range this exclusion describes" if kind == "exclusion" else "within the limit"
    verdict = where if inside else f"not {where}" if kind == "exclusion" else "outside the limit"
    if value.lab is not None and limit.raw:
        return inside, _upload_reason(limit, value.lab, inside, kind) + same, value.evidence
    reason = (
        f"{facts.source}: {value.shown} ({_fmt(value.value)} {unit}) is {verdict} "
        f'({row.name} {shown} {unit}, as written: "{limit.written}").{same}'
    )
    return inside, reason, value.evidence


def _upload_reason(limit: Limit, lab: LabValue, inside: bool, kind: str) -> str:
    """An uploaded value's reason in the wording of the uploaded-lab rules (rules.py): the value as uploaded
    with its date, converted to the limit's unit when that differs, and the limit in the trial's own unit."""
    row = limit.row
    spec = BY_KEY.get(lab.key)
    unit = limit.raw[-1][2]
    shown = limit.joiner.join(f"{op} {n}" for op, n, _ in limit.raw) + (f" {unit}" if unit else "")
    converted = ""
    rule = row.units.get(_unit_key(unit)) if unit else None
    if rule is not None and _unit_key(unit) != _unit_key(lab.unit):
        std = row.to_standard(lab.value, lab.unit)
        if std is not None:
            converted = f" ({_fmt((std - rule[1]) / rule[0])} {unit})"
    if kind == "exclusion":
        verdict = f"is {'' if inside else 'not '}in the range this exclusion describes:"
    else:
        verdict = "is within the limit of" if inside else "is outside the limit of"
    name = spec.name if spec is not None else row.name
    guessed = ""
    if not unit:
        read = row.unit_read(float(limit.raw[-1][1].replace(",", "")), "")
        guessed = f" (no unit read with the limit; taken as {shown_unit(read) if read else row.unit})"
    return f"Your {name} of {_fmt(lab.value)} {lab.unit} on {lab.date}{converted} {verdict} {shown}{guessed}."
