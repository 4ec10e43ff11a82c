"""Oncogenic drivers that exclude each other: a trial asking for another driver than the patient's is not for
her.

In non-small cell lung cancer the driver alterations (EGFR, KRAS, ALK, ROS1, BRAF V600E, MET exon 14, RET,
NTRK, HER2) are generally mutually exclusive (WHO Thoracic Tumours 2021, NCCN NSCLC): an EGFR-mutant cancer is
not a KRAS G12C one. So an inclusion line that asks only for drivers of the patient's disease other than the
driver she has is not met. The drivers, the disease they are exclusive in and the alteration words are data
(data/vocab/oncogenic_drivers.csv, each row with its source); this module only reads and compares. A line with
words that could turn it around near the drivers ("without", "prior": qualifier_check's list) is left to the
rules.

Which alterations a class word covers ("sensitising EGFR mutations": exon 19 deletion, L858R, G719X, L861Q,
S768I; an exon 20 insertion usually not) is data too (data/vocab/driver_variants.csv, NCCN NSCLC and OncoKB):
`variant_check` settles a line about such a class from the variant the patient named, and whether the line
wants it absent comes from the ConText cues ("absence of", "no", "negative for", "wild-type";
data/vocab/context_rules.csv), not from patterns here.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from services.eligibility.labels import Label
from services.eligibility.parser import CriterionKind
from services.eligibility.qualifier_check import NEAR, NOT_PLAIN, QualifierCheck
from services.matching.context import context
from services.vocab.mesh import vocabulary

DATA = Path(__file__).resolve().parents[2] / "data" / "vocab" / "oncogenic_drivers.csv"
VARIANTS = DATA.with_name("driver_variants.csv")
CLASS_BEFORE = 3  # words before a gene in which a class word ("sensitising") is the gene's
CLASS_AFTER = 4  # words after a gene ("EGFR mutations that are sensitive")
MAX_BETWEEN = 8  # words (variant codes, exon numbers, "or") between a gene and its alteration word


@dataclass(frozen=True)
class Drivers:
    """The driver table: gene cue → (driver, disease heading); the alteration words; a pattern for both."""

    genes: dict[str, tuple[str, str]]
    pattern: re.Pattern[str]  # genes followed by an alteration word
    gene: re.Pattern[str]  # one gene cue


@cache
def drivers() -> Drivers:
    """The table in data/vocab/oncogenic_drivers.csv, as a pattern "GENE … alteration" (genes in capitals)."""
    genes: dict[str, tuple[str, str]] = {}
    alterations: list[str] = []
    with open(DATA, encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            if row["kind"] == "driver":
                genes[row["cue"]] = (row["value"], row["disease"])
            elif row["kind"] == "alteration":
                alterations.append(row["cue"])
    gene = "|".join(sorted(map(re.escape, genes), key=len, reverse=True))
    alt = "|".join(sorted(map(re.escape, alterations), key=len, reverse=True))
    # between a gene and its alteration word: variant codes, exon numbers, "or"/"and" and further genes
    # and class words ("EGFR sensitizing mutation", driver_variants.csv)
    classes = "|".join(sorted(map(re.escape, variant_table().class_words), key=len, reverse=True))
    between = rf"(?:[A-Z]\d+[A-Z]?|exon|ex|\d+|or|and|p\.[A-Z]\d+[A-Z]?|{gene}|(?i:{classes}))"
    pattern = re.compile(
        rf"(?<![\w-])(?:{gene})(?![\w])(?:[\s,/()-]+{between}){{0,{MAX_BETWEEN}}}"
        rf"[\s,/()-]+(?i:{alt})\b"
    )
    return Drivers(genes, pattern, re.compile(rf"(?<![\w-])(?:{gene})(?![\w])"))


def named_drivers(text: str) -> dict[str, str]:
    """The drivers a text names with an alteration ("KRAS G12C mutation" → {"KRAS": disease heading}); none
    when a word that could turn it around ("no", "without", "prior") comes a little before the first one or
    anywhere after it."""
    table = drivers()
    found = list(table.pattern.finditer(text))
    if not found or NOT_PLAIN.search(text, max(0, found[0].start() - NEAR)):
        return {}
    cues = [g.group() for m in found for g in table.gene.finditer(m.group())]
    return {table.genes[c][0]: table.genes[c][1] for c in cues}


def patient_drivers(texts: Iterable[str], conditions: Iterable[str]) -> dict[str, str]:
    """The patient's altered drivers named in the texts, each with the disease it is exclusive in, kept only
    when one of the patient's conditions lies under that disease ("ALK negative" names none)."""
    mesh = vocabulary()
    under = {u for c in conditions for h in mesh.resolve(c) for u in mesh.broader(h)}
    found: dict[str, str] = {}
    for text in texts:
        found |= named_drivers(text or "")
    return {d: disease for d, disease in found.items() if mesh.by_name.get(disease.lower()) in under}


def check(text: str, kind: CriterionKind, patient: dict[str, str]) -> QualifierCheck | None:
    """An inclusion line asking only for other drivers of the patient's disease: not met; else None."""
    if kind != "inclusion" or not patient:
        return None
    asked = {d: disease for d, disease in named_drivers(text).items() if disease in patient.values()}
    if not asked or set(asked) & set(patient):
        return None
    mine = " and ".join(sorted(patient))
    wanted = " or ".join(sorted(asked))
    return QualifierCheck(
        Label.NOT_MET,
        f"The trial asks for a {wanted} alteration; you said your cancer has an "
        f"{mine} alteration. In this cancer such driver alterations generally do not occur "
        "together (WHO 2021, NCCN).",
    )


# Variant classes ("sensitising EGFR mutations"): which of the patient's alterations a class word covers.


@dataclass(frozen=True)
class Variant:
    """One named alteration of a gene and its classes: surely in, surely out, typically out."""

    cue: str
    gene: str
    classes: frozenset[str]
    not_classes: frozenset[str]
    typically_not: frozenset[str]
    source: str


@dataclass(frozen=True)
class VariantTable:
    """data/vocab/driver_variants.csv: class words, variants and the words that leave a line to the rules."""

    class_words: dict[str, str]
    variants: tuple[Variant, ...]
    refuse: re.Pattern[str]
    joins: re.Pattern[str]


def _words(pattern: Iterable[str]) -> str:
    return "|".join(sorted((re.escape(w).replace(r"\ ", r"\s+") for w in pattern), key=len, reverse=True))


def _set(cell: str) -> frozenset[str]:
    return frozenset(c.strip() for c in cell.split(";") if c.strip())


@cache
def variant_table() -> VariantTable:
    """The variant table, read once."""
    words: dict[str, str] = {}
    variants: list[Variant] = []
    refuse: list[str] = []
    joins: list[str] = []
    with open(VARIANTS, encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            if row["kind"] == "class":
                words[row["cue"].lower()] = row["classes"]
            elif row["kind"] == "variant":
                variants.append(Variant(row["cue"], row["gene"], _set(row["classes"]),
                                        _set(row["not_classes"]), _set(row["typically_not"]), row["source"]))
            elif row["kind"] == "refuse":
                refuse.append(row["cue"])
            elif row["kind"] == "joins":
                joins.append(row["cue"])
    return VariantTable(words, tuple(variants), re.compile(rf"\b(?:{_words(refuse)})\b", re.I),
                        re.compile(rf"\b(?:{_words(joins)})\b", re.I))


def _variant_pattern(v: Variant) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w]){_words([v.cue])}(?![\w])", re.I)


def patient_variants(texts: Iterable[str]) -> dict[str, list[Variant]]:
    """The named alterations in the patient's own words, by gene: a variant counts only in a text that names
    its gene too ("HER2 exon 20 insertion" is no EGFR variant) and does not negate it."""
    table = drivers()
    found: dict[str, list[Variant]] = {}
    for text in texts:
        genes = {table.genes[m.group()][0] for m in table.gene.finditer(text or "")}
        for v in variant_table().variants:
            hit = _variant_pattern(v).search(text or "") if v.gene in genes else None
            if hit and context().assertion(text, hit.start(), hit.end()) != "negated":
                found.setdefault(v.gene, []).append(v)
    return found


def _mentions(text: str, gene: str) -> list[re.Match[str]]:
    """The line's mentions of a gene's alterations: "GENE … mutation" or a negated gene ("EGFR wild-type")."""
    table = drivers()
    spans = [(m.start(), m.end()) for m in table.pattern.finditer(text)]
    return [m for m in table.gene.finditer(text) if table.genes[m.group()][0] == gene
            and (any(a <= m.start() < b for a, b in spans)
                 or context().assertion(text, m.start(), m.end()) == "negated")]


def _classes(text: str, mention: re.Match[str]) -> set[str]:
    """The class words next to a mention: up to CLASS_BEFORE words before the gene ("sensitising EGFR",
    "activating mutations in EGFR") or in its own phrase after it ("EGFR-sensitizing mutation", "EGFR
    mutations that are sensitive"), never past another gene."""
    words, genes = variant_table().class_words, drivers().genes
    before = re.findall(r"\w+", text[:mention.start()])[-CLASS_BEFORE:]
    while any(w in genes for w in before):  # a word before another gene is that gene's
        before = before[1:]
    after = []  # "EGFR mutations that are sensitive to …": the gene's own phrase, up to a comma or an "or"
    for word in re.findall(r"\w+", re.split(r"[,;.]", text[mention.end():])[0])[:CLASS_AFTER]:
        if word in genes or word.lower() in ("or", "and", "nor"):
            break
        after.append(word)
    return {words[w.lower()] for w in [*before, *after] if w.lower() in words}


_VARIANT_CODE = re.compile(r"\b(?:[A-Z]\d+[A-Z]?|exon|ex\d+\w*|del\d+|\d+del)\b", re.I)


def _specific(text: str, mention: re.Match[str]) -> bool:
    """Whether the phrase after a mention names a variant ("EGFR T790M mutation", "EGFR exon 20")."""
    ends = (m.end() for m in drivers().pattern.finditer(text) if m.start() <= mention.start() < m.end())
    return bool(_VARIANT_CODE.search(text, mention.end(), next(ends, mention.end() + 20)))


def plain(text: str) -> bool:
    """Whether a line says nothing besides its alterations: no turning word (qualifier_check) and no word that
    joins another requirement to them ("and", "who"; driver_variants.csv)."""
    return not NOT_PLAIN.search(text) and not variant_table().joins.search(text)


def _a(words: str) -> str:
    return f"{'an' if words[:1].lower() in 'aeiou' else 'a'} {words}"


def variant_check(text: str, kind: CriterionKind, patient: dict[str, list[Variant]]) -> QualifierCheck | None:
    """A line about a gene's alterations ("absence of sensitising EGFR mutations", "EGFR wild-type") decided
    from the variants the patient named, or None when it is left to the rules. A class her variant surely
    belongs to settles the line either way; one it only typically falls outside never counts against her; a
    class the table cannot place ("activating" for an exon 20 insertion) is for the study team."""
    if not patient or variant_table().refuse.search(text):
        return None
    for gene, mine in patient.items():
        mentions = _mentions(text, gene)
        if len(mentions) > 1:
            return None  # a gene named twice may be an alternative ("wild-type, or mutant after a TKI")
        if not mentions:
            continue
        asked = _classes(text, mentions[0])
        negated = context().assertion(text, mentions[0].start(), mentions[0].end()) == "negated"
        what = " ".join([" or ".join(sorted(asked)), gene, "alteration"]).strip()
        said = f"You said your cancer has {gene} {' and '.join(v.cue for v in mine)}"
        named = any(_variant_pattern(v).search(text) for v in mine)  # the line lists her variant itself
        if not named and not asked and _specific(text, mentions[0]):
            return None  # "without EGFR T790M": about one variant, not hers, not every EGFR alteration
        if named or not asked or any(asked & v.classes for v in mine):
            if not negated and kind == "exclusion" and asked and plain(text):
                return QualifierCheck(Label.MET, f"This exclusion is about {_a(what)}. {said}, which is one.")
            if not negated:
                return None  # met as far as the alteration goes; the rules read the rest of the line
            return QualifierCheck(Label.NOT_MET, f"The trial asks for no {what}. {said}, which is one."
                                  if kind == "inclusion" else
                                  f"This exclusion is about people without {_a(what)}. {said}, which is one.")
        surely = all(asked <= v.not_classes for v in mine)
        usually = all(asked <= v.not_classes | v.typically_not for v in mine)
        if usually and not negated and (kind == "exclusion" or surely):
            word = "" if surely else " usually"
            return QualifierCheck(Label.NOT_MET, f"{said}, which is{word} not counted as {_a(what)} (source: "
                                  f"{'; '.join(sorted({v.source for v in mine}))}).")
        reason = (f"{said}; whether that counts as {_a(what)} here"
                  f"{' (usually not)' if usually and not surely else ''} is for the study team to say.")
        return QualifierCheck(Label.NEEDS_DISCUSSION, reason)
    return None
