"""Checks on what an answer claims before it is shown: verdicts, places, distances and numbers.

A sentence that tells the patient they are eligible or excluded for a trial must agree with the trial's saved
check; a place named with a trial must be one of its sites (or the patient's own place) in this conversation's
tool results; a distance must be one of the trial's site distances; a percentage or a count must be a number
some tool result (or the patient) gave, within the rounding the sentence uses. The cue words are data
(data/assistant/claim_terms.csv and claim_context.csv, each row with an example that tests it); the ConText
engine is the project's one (services.matching.context). What cannot be checked is flagged, never rewritten.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

from services.assistant.grounding import cited_ids
from services.assistant.session import AssistantSession
from services.data import geo
from services.eligibility.scoring import Verdict
from services.errors import BadInput
from services.matching.context import Context, load_rules

DATA_DIR = Path(__file__).resolve().parents[2] / "data" / "assistant"
TERMS_PATH = DATA_DIR / "claim_terms.csv"
CONTEXT_PATH = DATA_DIR / "claim_context.csv"
CATEGORIES = frozenset({"verdict", "unit", "comparator", "place_prep", "not_place", "result_key"})
MAX_UNIT_GAP = 2  # words between a number and its unit ("300 adult patients")
MAX_QUOTE = 160

# What a verdict word allows the saved verdict to be, by how the sentence asserts it.
ALLOWED: dict[tuple[str, str], frozenset[str]] = {
    ("eligible", "affirmed"): frozenset({"eligible"}),
    ("eligible", "hypothetical"): frozenset({"eligible", "uncertain"}),
    ("eligible", "negated"): frozenset({"excluded", "not_relevant"}),
    ("excluded", "affirmed"): frozenset({"excluded", "not_relevant"}),
    ("excluded", "hypothetical"): frozenset({"excluded", "not_relevant", "uncertain"}),
    ("excluded", "negated"): frozenset({"eligible", "uncertain"}),
}

_NUMBER = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\d,]*\d)")
_WORDS = re.compile(r"[^\W_]+|%")
_CONTRACTION = re.compile(r"n['’]t\b", re.I)
_SENTENCE = re.compile(r"[^\n]+?(?:[.!?](?=\s)|$)", re.M)
_RUN = re.compile(r"[A-Z][\w'’-]*(?:(?:,\s*|\s+(?:of|de|del|la|upon)\s+|\s+)[A-Z][\w'’-]*)*")


@dataclass(frozen=True)
class Term:
    """One row of claim_terms.csv."""

    cue: str
    category: str
    value: str
    source: str
    example: str
    expected: str

    @property
    def words(self) -> tuple[str, ...]:
        """The cue's words, lower case ("%" is a word of its own)."""
        return tuple(w.lower() for w in _WORDS.findall(self.cue))


def load_terms(path: Path = TERMS_PATH) -> tuple[Term, ...]:
    """The cue table, validated row by row (BadInput names the line)."""
    with open(path, encoding="utf-8", newline="") as fh:
        rows = [(n, row) for n, row in enumerate(csv.DictReader(fh), start=2)]
    out = []
    for n, row in rows:
        term = Term(
            *(
                str(row.get(k) or "").strip()
                for k in ("cue", "category", "value", "source", "example", "expected")
            )
        )
        if term.category not in CATEGORIES or not term.words or not term.value or not term.source:
            raise BadInput(
                f"claim term on line {n}: a cue, a known category, a value and a source are required"
            )
        out.append(term)
    return tuple(out)


@cache
def terms() -> dict[str, tuple[Term, ...]]:
    """The shipped cue table by category, longest cue first."""
    by: dict[str, list[Term]] = defaultdict(list)
    for term in load_terms():
        by[term.category].append(term)
    return {k: tuple(sorted(v, key=lambda t: -len(t.words))) for k, v in by.items()}


@cache
def claim_context() -> Context:
    """The ConText engine over the claim cues."""
    return Context(load_rules(CONTEXT_PATH))


def _tokens(text: str) -> list[re.Match[str]]:
    return list(_WORDS.finditer(text))


def _find(tokens: list[re.Match[str]], table: Iterable[Term]) -> Iterator[tuple[Term, int, int]]:
    """(term, first token, last token) of each cue in the tokens, the longest cue at a word winning."""
    words = [t.group().lower() for t in tokens]
    rows = list(table)
    i = 0
    while i < len(words):
        term = next((r for r in rows if tuple(words[i : i + len(r.words)]) == r.words), None)
        if term is None:
            i += 1
            continue
        yield term, i, i + len(term.words) - 1
        i += len(term.words)


# ------------------------------------------------------------------------------------------------ reading


@dataclass(frozen=True)
class VerdictMention:
    """A verdict word about the patient: its polarity (eligible / excluded), its assertion and where it
    stands."""

    polarity: str
    assertion: str
    start: int
    end: int

    @property
    def allowed(self) -> frozenset[str]:
        """The saved verdicts this sentence agrees with."""
        return ALLOWED[(self.polarity, self.assertion)]


def verdict_mentions(sentence: str) -> list[VerdictMention]:
    """Verdict words in one sentence that speaks to the patient ("you"), with negation and possibility read.
    """
    text = _CONTRACTION.sub(" not", sentence)
    tokens = _tokens(text)
    if not {"you", "your"} & {t.group().lower() for t in tokens}:
        return []
    out = []
    for term, first, last in _find(tokens, terms().get("verdict", ())):
        start, end = tokens[first].start(), tokens[last].end()
        assertion = claim_context().assertion(text, start, end)
        out.append(VerdictMention(term.value, "affirmed" if assertion == "family" else assertion, start, end))
    return out


@dataclass(frozen=True)
class NumberMention:
    """A number with a unit (percent, count, miles, km) and how it is meant (exact, approx, at_most,
    at_least)."""

    value: Decimal
    unit: str
    comparator: str
    text: str


def number_mentions(sentence: str) -> list[NumberMention]:
    """Numbers in one sentence that carry a unit from the cue table (others, such as ages or phases, are
    left)."""
    out = []
    units, comparators = terms().get("unit", ()), terms().get("comparator", ())
    for m in _NUMBER.finditer(sentence):
        after = _tokens(sentence[m.end() :])[: MAX_UNIT_GAP + 2]
        unit = next(
            (
                (t, last)
                for t, first, last in _find(after, units)
                if first <= MAX_UNIT_GAP and (t.cue != "%" or first == 0)
            ),
            None,
        )
        if unit is None:
            continue
        before = _tokens(sentence[: m.start()])[-4:]
        hits = [(t, last) for t, _, last in _find(before, comparators)]
        comparator = next((t.value for t, last in reversed(hits) if last >= len(before) - 2), "exact")
        raw = m.group(1).replace(",", "") + (f".{m.group(2)}" if m.group(2) else "")
        shown = sentence[m.start() : m.end() + after[unit[1]].end()]
        out.append(NumberMention(Decimal(raw), unit[0].value, comparator, shown))
    return out


def place_mentions(sentence: str) -> list[str]:
    """Capitalised names after a place preposition ("in Houston", "near Santa Barbara, California")."""
    preps = {t.cue.lower() for t in terms().get("place_prep", ())}
    never = {t.cue for t in terms().get("not_place", ())}
    out = []
    for m in re.finditer(r"\b(\w+)\s+(?=[A-Z])", sentence):
        if m.group(1).lower() not in preps:
            continue
        run = _RUN.match(sentence, m.end())
        if run is None or "NCT" in run.group():
            continue
        words = run.group().split()
        if words[0].strip(",") in never:
            continue
        out.append(run.group().rstrip(","))
    return out


def agrees(claimed: Decimal, comparator: str, actual: float) -> bool:
    """Whether a number as written agrees with a value: exact to the written precision, approx to its last
    significant digit, or as a bound."""
    exponent = claimed.as_tuple().exponent
    places = exponent if isinstance(exponent, int) else 0
    half = Decimal(5) * Decimal(10) ** (places - 1)
    if comparator == "approx" and claimed and places == 0:
        digits = str(int(claimed))
        zeros = len(digits) - len(digits.rstrip("0"))
        half = Decimal(5) * Decimal(10) ** (zeros - 1)
    value = Decimal(str(actual))
    if comparator == "at_most":
        return value <= claimed + half
    if comparator == "at_least":
        return value >= claimed - half
    return abs(value - claimed) <= half


# ------------------------------------------------------------------------------------------------ evidence


@dataclass
class TrialEvidence:
    """What this conversation's tool results say about one trial: its places, its site distances, its text."""

    text: list[str] = field(default_factory=list)
    cities: set[str] = field(default_factory=set)
    states: set[str] = field(default_factory=set)
    countries: set[str] = field(default_factory=set)
    distances: list[float] = field(default_factory=list)
    sites: list[Mapping[str, Any]] = field(default_factory=list)


@dataclass
class Evidence:
    """The facts an answer may state: numbers from tool results and the patient, and each trial's places."""

    numbers: list[float] = field(default_factory=list)
    percents: list[float] = field(default_factory=list)
    patient_numbers: list[float] = field(default_factory=list)
    patient_places: str = ""
    trials: dict[str, TrialEvidence] = field(default_factory=lambda: defaultdict(TrialEvidence))


def _keys(value: str) -> set[str]:
    return {t.value for t in terms().get("result_key", ()) if t.cue == value or t.cue in value.split("_")}


def _numbers_in(text: str) -> Iterator[float]:
    for m in _NUMBER.finditer(text):
        yield float(m.group(1).replace(",", "") + (f".{m.group(2)}" if m.group(2) else ""))


def _walk(value: Any, evidence: Evidence, trial: TrialEvidence | None, key: str = "") -> None:
    if isinstance(value, Mapping):
        nct = value.get("nct_id")
        if isinstance(nct, str) and nct.upper() in cited_ids(nct.upper()):
            trial = evidence.trials[nct.upper()]
            trial.text.append(geo.fold(json.dumps(value, ensure_ascii=False)))
        if trial is not None and {"city", "country"} & set(value) and not {"nct_id"} & set(value):
            trial.sites.append(value)
        for k, v in value.items():
            _walk(v, evidence, trial, str(k))
        return
    if isinstance(value, list):
        for item in value:
            _walk(item, evidence, trial, key)
        return
    kinds = _keys(key)
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int | float):
        evidence.numbers.append(float(value))
        if "percent" in kinds:
            evidence.percents.append(float(value))
        if "miles" in kinds and trial is not None:
            trial.distances.append(float(value))
        return
    text = str(value)
    evidence.numbers.extend(_numbers_in(text))
    evidence.percents.extend(
        float(m.group(1)) for m in re.finditer(r"(\d+(?:\.\d+)?)\s*(?:%|percent\b)", text)
    )
    if "place" in kinds and trial is not None:
        _add_place(trial, key, text)


def _add_place(trial: TrialEvidence, key: str, text: str) -> None:
    if key == "city":
        trial.cities.add(geo.fold(text))
    elif key == "state":
        trial.states.update(x for x in (geo.us_state_code(text), geo.fold(text)) if x)
    elif key == "country":
        trial.countries.update(x for x in (geo.country_code(text), geo.fold(text)) if x)


def evidence(session: AssistantSession) -> Evidence:
    """The facts of this conversation: every successful tool result, the patient's own words and saved
    profile."""
    found = Evidence()
    patient_text: list[str] = []
    for message in session.messages:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks:
            if block.get("type") == "tool_result" and not block.get("is_error"):
                raw = block.get("content")
                text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
                try:
                    _walk(json.loads(text), found, None)
                except json.JSONDecodeError:  # a result cut at its length limit: its numbers still count
                    found.numbers.extend(_numbers_in(text))
            elif block.get("type") == "text" and message["role"] == "user":
                patient_text.append(str(block.get("text") or ""))
    profile = json.dumps(session.patient_profile, ensure_ascii=False, default=str)
    found.patient_numbers = [*_numbers_in(profile), *(n for t in patient_text for n in _numbers_in(t))]
    found.patient_places = geo.fold(" ".join([profile, *patient_text]))
    return found


# ------------------------------------------------------------------------------------------------ checking


@dataclass(frozen=True)
class Flag:
    """A claim that could not be checked: the sentence it stands in, the words claimed and why."""

    sentence: str
    claim: str
    why: str


def sentences(text: str) -> list[tuple[int, str]]:
    """(offset, sentence) for each sentence of the answer (a line break ends one, too)."""
    return [(m.start(), m.group().strip()) for m in _SENTENCE.finditer(text) if m.group().strip()]


def _trial_for(sentence: str, at: int, before: list[str]) -> str | None:
    """The trial a claim at sentence[at] is about: the next id in the sentence, else the one before it,
    else the last id the answer named before this sentence."""
    after = cited_ids(sentence[at:])
    earlier = cited_ids(sentence[:at])
    return after[0] if after else earlier[-1] if earlier else before[-1] if before else None


def _contains(haystack: str, needle: str) -> bool:
    return bool(needle) and f" {needle} " in f" {haystack} "


def _place_ok(name: str, trial: TrialEvidence, found: Evidence) -> bool:
    key = geo.fold(name)
    if any(_contains(t, key) for t in trial.text) or _contains(found.patient_places, key):
        return True
    place = geo.geocode(name).place
    if place is None:
        return True  # not a place the gazetteer knows (a hospital's name, a programme): nothing to check
    if place.kind == "country":
        return bool({geo.country_code(place.country), geo.fold(place.country)} & trial.countries)
    if place.kind == "state":
        return bool({geo.us_state_code(place.state or ""), geo.fold(place.state or "")} & trial.states)
    return geo.fold(place.name.split(",")[0]) in trial.cities


def _nearest(trial: TrialEvidence) -> str:
    if not trial.distances:
        return ""
    site = min(
        (s for s in trial.sites if isinstance(s.get("distance_miles"), int | float)),
        key=lambda s: float(s["distance_miles"]),
        default=None,
    )
    where = ", ".join(str(site[k]) for k in ("city", "state") if site and site.get(k))
    place = f" is in {where}," if where else " is"
    return f" (its nearest site{place} {min(trial.distances):,.0f} miles away)"


def _check_verdicts(sentence: str, before: list[str], session: AssistantSession) -> Iterator[Flag]:
    for mention in verdict_mentions(sentence):
        nct = _trial_for(sentence, mention.start, before)
        if nct is None:
            continue
        saved = session.matched(nct)
        claim = _quote(sentence)
        if saved is None:
            yield Flag(sentence, claim, f"no eligibility check of {nct} was saved in this conversation")
        elif str(saved.get("verdict")) not in mention.allowed:
            words = (
                Verdict(saved["verdict"]).display
                if saved.get("verdict") in set(Verdict)
                else saved.get("verdict")
            )
            yield Flag(sentence, claim, f"the saved check of {nct} says “{words}”")


def _check_places(sentence: str, before: list[str], found: Evidence) -> Iterator[Flag]:
    for name in place_mentions(sentence):
        nct = _trial_for(sentence, sentence.find(name), before)
        if nct is None:
            continue
        trial = found.trials.get(nct) or TrialEvidence()
        for part in (p.strip() for p in name.split(",")):
            if part and not _place_ok(part, trial, found):
                looked = (
                    "none of its sites found in this conversation is there"
                    if trial.cities or trial.sites
                    else "no search or lookup in this conversation names a site of it there"
                )
                yield Flag(sentence, part, f"{nct}: {looked}{_nearest(trial)}")


def _check_numbers(sentence: str, before: list[str], found: Evidence) -> Iterator[Flag]:
    for mention in number_mentions(sentence):
        if mention.unit in ("miles", "km"):
            nct = _trial_for(sentence, sentence.find(mention.text), before)
            trial = found.trials.get(nct) if nct else None
            pool = list(trial.distances if trial else [d for t in found.trials.values() for d in t.distances])
            if mention.unit == "km":
                pool = [d * geo.KM_PER_MILE for d in pool]
            pool += found.patient_numbers
            what = (
                f"no site distance of {nct} in this conversation's lookups is {mention.text}"
                if nct
                else f"no site distance in this conversation's lookups is {mention.text}"
            )
        else:
            pool = (found.percents if mention.unit == "percent" else found.numbers) + found.patient_numbers
            what = (
                f"no search or lookup in this conversation gives {mention.text}"
                if mention.unit == "percent"
                else f"no search or lookup in this conversation gives the number {mention.text}"
            )
        if not any(agrees(mention.value, mention.comparator, v) for v in pool if math.isfinite(v)):
            yield Flag(sentence, mention.text, what)


def _quote(sentence: str) -> str:
    return sentence if len(sentence) <= MAX_QUOTE else sentence[: MAX_QUOTE - 1].rstrip() + "…"


def check_claims(text: str, session: AssistantSession) -> list[Flag]:
    """Every claim of the answer that does not agree with the saved checks or this conversation's tool
    results."""
    found = evidence(session)
    flags: list[Flag] = []
    before: list[str] = []
    for _, sentence in sentences(text):
        flags += _check_verdicts(sentence, before, session)
        flags += _check_places(sentence, before, found)
        flags += _check_numbers(sentence, before, found)
        before += cited_ids(sentence)
    return flags


def warning_text(flags: list[Flag]) -> str:
    """The banner for flagged claims: what could not be checked and why, one line each."""
    lines = [f"“{f.claim}” — {f.why}." for f in flags]
    return (
        "Not checked: some statements in this answer do not match this app's saved checks or the search and "
        "lookup results of this conversation. They are marked “Not checked” below; do not rely on them.\n"
        + "\n".join(lines)
    )
