"""The one condition model: what a typed condition means, for Explore, Map, Trials and the assistant alike.

A condition text becomes a set of *alternatives*; a condition name, MeSH term or keyword matches when it
contains every word of one alternative (any order). Words are compared after folding case, possessive,
plural and hyphen variants ("Alzheimer", "Alzheimer's", "alzheimers" are one word), and a few spelling
groups ("cancer" = "carcinoma" = "neoplasm" = "tumour"). A term of the shipped MeSH tree excerpt
(data/conditions/mesh_tree.csv) found in the text brings in its narrower terms and every name of them
(MeSH entry terms and the abbreviations of data/conditions/synonyms.csv), so "lung cancer" also finds
"NSCLC", "SCLC" and "lung adenocarcinoma". It also brings in the heading one level up *as a whole*: a trial
for a broader disease with no narrower kind named ("NSCLC", "Metastatic non-small cell lung cancer") takes
patients with every kind of it, so "lung adenocarcinoma" finds it, but not "Squamous NSCLC". A term counts as
the broader disease as a whole when it has every word of one of its names and otherwise only words of its
other names or words of stage, extent and course (EXTENT_WORDS). Sources: data/conditions/README.md.

A term is compared as its array of words: the SQL splits it (on the base tables) or reads the stored array of
the term dictionary app.terms (GIN-indexed, so the in-process engine resolves a condition in the dictionary);
the assistant's checks of single trials split it in Python the same way, so every path selects the same studies.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parents[2] / "data" / "conditions"
MAX_WORDS = 12  # words of a typed condition that count
MAX_ALTERNATIVES = 200  # most alternatives one condition expands to (a bound on the SQL's size)

# Words that name the same thing in condition names and MeSH terms ("lung cancer" is MeSH "Lung Neoplasms").
WORD_GROUPS: tuple[tuple[str, ...], ...] = (
    ("cancer", "cancers", "carcinoma", "carcinomas", "neoplasm", "neoplasms", "tumor", "tumors", "tumour",
     "tumours", "malignancy", "malignancies"),
    ("leukemia", "leukaemia", "leukemias"),
    ("anemia", "anaemia"),
)

# Words that say how far or how long a disease has gone — stage, extent, course — and never which kind it is
# (general clinical vocabulary as written in registry condition names, with the AJCC/TNM staging systems' own words
# as in "Stage IV Lung Cancer AJCC v8"). A term made of a broader disease's name and such words is still a trial for
# that disease as a whole. Stage numbers count only beside the word "stage": "Diabetes Mellitus I" names a kind.
EXTENT_WORDS = frozenset((
    "advanced", "metastatic", "metastasized", "locally", "local", "locoregional", "regional", "disseminated",
    "recurrent", "recurring", "relapsed", "refractory", "unresectable", "resectable", "resected", "operable",
    "inoperable", "early", "late", "newly", "diagnosed", "previously", "treated", "untreated", "pretreated",
    "stage", "stages", "ajcc", "tnm", "v5", "v6", "v7", "v8", "v9", "clinical", "pathologic", "pathological",
    "prognostic", "anatomic", "and", "or", "of", "the", "s",
))
STAGE_WORDS = ("stage", "stages")
STAGE_NUMBERS = frozenset((
    "0", "1", "2", "3", "4", "i", "ii", "iii", "iv", "ia", "ib", "ic", "iia", "iib", "iic", "iiia", "iiib", "iiic",
    "iva", "ivb", "ivc",
))

# A word as PostgreSQL's \m…\M sees one (letters, digits, underscore), with a possessive "'s" kept attached.
_WORD_RE = re.compile(r"\w+(?:['’]s(?!\w))?", re.IGNORECASE)
_POSSESSIVE = r"(?:['’]s)?"


def fold(word: str) -> str:
    """One word in its compared form: lower case, no possessive "'s", singular ("alzheimers" → "alzheimer").

    Only words of five letters or more lose a plural s, so abbreviations ("MS", "AIDS", "PCOS") stay as written.
    """
    w = word.lower()
    if w.endswith(("'s", "’s")):
        w = w[:-2]
    if len(w) >= 5:
        if w.endswith("ies"):
            return w[:-3] + "y"
        if w.endswith(("sses", "uses")):
            return w[:-2]
        if w.endswith("s") and not w.endswith(("ss", "us", "is")):
            return w[:-1]
    return w


def words(text: str) -> tuple[str, ...]:
    """The compared words of a text, in order ("Non-small-cell lung cancers" → non, small, cell, lung, cancer)."""
    return tuple(fold(w) for w in _WORD_RE.findall(text))


_GROUP_OF: dict[str, tuple[str, ...]] = {}
for _group in WORD_GROUPS:
    _folded = tuple(dict.fromkeys(fold(w) for w in _group))
    for _w in _folded:
        _GROUP_OF.setdefault(_w, _folded)


def _canon(word: str) -> str:
    """The representative of a word's spelling group (the word itself outside every group)."""
    return _GROUP_OF.get(word, (word,))[0]


def _surfaces(word: str) -> list[str]:
    """Every written form whose folded form is `word` (before an optional possessive)."""
    forms = [word, word + "s", word + "es"]
    if word.endswith("y"):
        forms.append(word[:-1] + "ies")
    return [f for f in dict.fromkeys(forms) if fold(f) == word]


@dataclass(frozen=True)
class Alternative:
    """Words a term must all contain (any order); `whole` means the term must be exactly this one word; `within`
    (written word forms), when given, means the term may have no word outside it (a broader disease as a whole)."""

    words: tuple[str, ...]
    whole: bool = False
    within: frozenset[str] = frozenset()

    @property
    def key(self) -> frozenset[str]:
        """The words up to spelling groups (for deciding that one alternative implies another)."""
        return frozenset(_canon(w) for w in self.words)


def forms(word: str) -> list[str]:
    """Every written word that counts as `word`: its plural and singular forms and those of its spelling group."""
    return sorted({f for member in _GROUP_OF.get(word, (word,)) for f in _surfaces(member)})


def pg_word_pattern(word: str) -> str:
    """PostgreSQL regex: the word as a whole word in any of its written forms (for free text such as
    intervention names, where no word array is at hand)."""
    body = "|".join(re.escape(f) for f in sorted(forms(word), key=lambda f: (-len(f), f)))
    return r"\m(?:" + body + ")" + _POSSESSIVE + r"\M"


def term_words(term: str) -> list[str]:
    """A term's words as `WORDS_SQL` splits them: runs of letters, digits and underscores, lower case."""
    return [w for w in _SPLIT_RE.split(term.lower()) if w]


# The same split in SQL (a term's words; empty strings at the ends are harmless to every test below).
_SPLIT_RE = re.compile(r"[^\w]+")
SPLIT_PATTERN = "[^[:alnum:]_]+"


def words_sql(column: str) -> str:
    """SQL: the words of a lower-case term column, as `term_words` gives them."""
    return f"regexp_split_to_array({column}, '{SPLIT_PATTERN}')"


# ---- the shipped vocabulary ---------------------------------------------------------------------------------
@dataclass
class Concept:
    """A MeSH heading of the excerpt: its names (heading, entry terms, abbreviations) and tree links."""

    heading: str
    parents: tuple[str, ...]
    names: list[Alternative] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)  # the names as written, for the sidebar
    abbreviations: list[str] = field(default_factory=list)  # those of them from the abbreviation table
    children: list[str] = field(default_factory=list)

    def everyday_name(self) -> tuple[str, str]:
        """Its first entry term (else the heading), and " (abbreviations)" or ""; for the sidebar."""
        plain = self.labels[1] if len(self.labels) > len(self.abbreviations) + 1 else self.heading
        return plain, f" ({', '.join(self.abbreviations)})" if self.abbreviations else ""


@dataclass(frozen=True)
class Vocabulary:
    """The MeSH tree excerpt with its names, and an index from a name's words to its headings."""

    concepts: dict[str, Concept]
    by_key: dict[frozenset[str], tuple[str, ...]]

    def closure(self, heading: str) -> list[str]:
        """The heading and every heading below it in the tree, broader first."""
        out: list[str] = []
        todo = [heading]
        while todo:
            h = todo.pop(0)
            if h not in out:
                out.append(h)
                todo.extend(self.concepts[h].children)
        return out

    def whole_names(self, heading: str, rest: tuple[str, ...]) -> list[Alternative]:
        """The heading's names as alternatives that match a term naming it as a whole: every word of one name (and
        the other typed words `rest`), nothing else but words of its names, of `rest` and EXTENT_WORDS."""
        c = self.concepts[heading]
        allowed = frozenset(f for n in c.names for w in (*n.words, *rest) for f in forms(w)) | EXTENT_WORDS
        # Not its ambiguous abbreviations ("DM", "MS"): a condition name that is only that says too little.
        return [Alternative(rest + n.words, within=allowed) for n in c.names if n.words and not n.whole]

    def ancestors(self, heading: str) -> set[str]:
        """Every heading above this one."""
        out: set[str] = set()
        todo = list(self.concepts[heading].parents)
        while todo:
            h = todo.pop()
            if h not in out:
                out.add(h)
                todo.extend(self.concepts[h].parents)
        return out


def _name(text: str, whole: bool = False) -> Alternative:
    return Alternative(tuple(dict.fromkeys(words(text))), whole)


@lru_cache(maxsize=1)
def vocabulary() -> Vocabulary:
    """The shipped MeSH tree excerpt and synonym/abbreviation table (read once)."""
    concepts: dict[str, Concept] = {}
    with open(DATA_DIR / "mesh_tree.csv", encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            heading = row["heading"].strip()
            c = Concept(heading, tuple(p for p in row["parents"].split("|") if p))
            for label in [heading, *(t for t in row["entry_terms"].split("|") if t.strip())]:
                c.names.append(_name(label))
                c.labels.append(label.strip())
            concepts[heading] = c
    with open(DATA_DIR / "synonyms.csv", encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            c = concepts[row["means"]]
            c.names.append(_name(row["term"], whole=row["match"] == "whole"))
            c.labels.append(row["term"].strip())
            c.abbreviations.append(row["term"].strip())
    for c in concepts.values():
        for p in c.parents:
            concepts[p].children.append(c.heading)
    by_key: dict[frozenset[str], list[str]] = {}
    for c in concepts.values():
        for n in c.names:
            if n.words and c.heading not in by_key.setdefault(n.key, []):
                by_key[n.key].append(c.heading)
    return Vocabulary(concepts, {k: tuple(v) for k, v in by_key.items()})


# ---- expansion -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Expansion:
    """What a typed condition searches for: alternatives and the MeSH headings it expanded to."""

    text: str
    alternatives: tuple[Alternative, ...]
    headings: tuple[str, ...]  # headings named in the text, then every narrower heading brought in
    named: tuple[str, ...]  # the headings the text itself names
    broader: tuple[str, ...] = ()  # the headings one level up, searched as a whole

    def terms_shown(self, limit: int = 12) -> tuple[list[str], int]:
        """What the condition also searches for, for the sidebar: each narrower MeSH heading by its everyday name
        with its abbreviations ("Non-Small Cell Lung Cancer (NSCLC)"), then the other names of the headings the
        text named. Shipped vocabulary only, never the typed text; at most `limit`, and how many more there are."""
        typed = frozenset(_canon(w) for w in words(self.text))
        vocab = vocabulary()
        shown: dict[str, str] = {}
        for h in self.headings:
            if h in self.named:
                continue
            c = vocab.concepts[h]
            if len(c.labels) == 1 and c.children:
                continue  # a grouping heading with no other name ("Neoplasms by Site"): its children are listed
            plain, abbr = c.everyday_name()
            shown.setdefault(plain.lower(), plain + abbr)
        for h in self.named:
            c = vocab.concepts[h]
            for label, name in zip(c.labels, c.names, strict=True):
                if name.key != typed:
                    shown.setdefault(label.lower(), label)
        for h in self.broader:
            plain, abbr = vocab.concepts[h].everyday_name()
            shown.setdefault(plain.lower() + " in general", f"{plain}{abbr} in general")
        labels = list(shown.values())
        return labels[:limit], max(0, len(labels) - limit)

    def matches(self, term: str, *, condition_name: bool = True) -> bool:
        """Whether one term matches (the same rule as the SQL). The broader disease as a whole counts only in a
        trial's own condition names (`condition_name`), never in MeSH terms or keywords: a MeSH ancestor or a
        keyword "diabetes" says nothing about which kind a trial is for."""
        found = term_words(term)
        have = set(found)
        for a in self.alternatives:
            sets = _form_sets(a)
            if a.whole:
                if len(found) == 1 and found[0] in sets[0]:
                    return True
            elif a.within:
                if condition_name and all(have & f for f in sets) and (
                        have <= a.within or (have & set(STAGE_WORDS) and have <= a.within | STAGE_NUMBERS)):
                    return True
            elif all(have & f for f in sets):
                return True
        return False

    def matches_any(self, terms: Iterable[str], *, condition_name: bool = True) -> bool:
        """Whether any of the terms matches."""
        return any(self.matches(t, condition_name=condition_name) for t in terms if t)

    def matches_trial(self, conditions: Iterable[str], others: Iterable[str]) -> bool:
        """Whether a trial matches by its condition names or by its MeSH terms and keywords (`others`)."""
        return self.matches_any(conditions) or self.matches_any(others, condition_name=False)


@lru_cache(maxsize=4096)
def _form_sets(alt: Alternative) -> list[frozenset[str]]:
    return [frozenset(forms(w)) for w in alt.words]


def _minimal(alts: Sequence[Alternative]) -> tuple[Alternative, ...]:
    """Alternatives without those another one implies (a term with all of B's words has all of A's when A ⊆ B)."""
    out: list[Alternative] = []
    word_keys = [a.key for a in alts if not a.whole and not a.within]
    single = {next(iter(a.key)) for a in alts if not a.whole and not a.within and len(a.key) == 1}
    seen: set[tuple[frozenset[str], bool, bool]] = set()
    for a in alts:
        if not a.words or (a.key, a.whole, bool(a.within)) in seen:
            continue
        if a.whole:
            if next(iter(a.key)) in single:
                continue
        elif any(k < a.key or (a.within and k == a.key) for k in word_keys):
            continue  # a term this alternative matches contains all of another one's words
        seen.add((a.key, a.whole, bool(a.within)))
        out.append(a)
    return tuple(out)


@lru_cache(maxsize=1024)
def expand(text: str) -> Expansion:
    """The alternatives of a typed condition: its own words, plus every name of the MeSH headings it names and
    of the headings below them (in place of the words that named them, the other typed words kept), plus the names
    of the headings one level up as whole terms (Vocabulary.whole_names)."""
    typed = tuple(dict.fromkeys(words(text)))[:MAX_WORDS]
    if not typed:
        return Expansion(text, (), (), ())
    vocab = vocabulary()
    # An ambiguous abbreviation typed alone ("ALL", "MS") is searched as a whole term, as its expansions are.
    alone = len(typed) == 1 and any(n.whole and n.words == typed for h in vocab.by_key.get(frozenset(typed), ())
                                    for n in vocab.concepts[h].names)
    alts: list[Alternative] = [Alternative(typed, whole=alone)]
    # Hyphenated words typed also match written together ("COVID-19" → "covid19").
    for a, b in re.findall(r"(\w+)-(\w+)", text):
        joined = fold(a + b)
        others = tuple(w for w in typed if w not in (fold(a), fold(b)))
        alts.append(Alternative(others + (joined,)))
    keys = {_canon(w): w for w in typed}
    # Headings whose name's words are all typed, the longest names first, each typed word used once.
    hits = sorted((k for k in vocab.by_key if k <= keys.keys()), key=lambda k: (-len(k), sorted(k)))
    used: set[str] = set()
    named: list[str] = []
    headings: list[str] = []
    broader: list[str] = []
    for k in hits:
        if k & used:
            continue
        used |= k
        rest = tuple(w for c, w in keys.items() if c not in k)
        for h in vocab.by_key[k]:
            named.append(h)
            for below in vocab.closure(h):
                if below not in headings:
                    headings.append(below)
                for n in vocab.concepts[below].names:
                    if n.whole and rest:
                        continue  # an ambiguous abbreviation is searched only as a whole term
                    alts.append(Alternative(rest + n.words if not n.whole else n.words, n.whole))
            for up in vocab.concepts[h].parents:
                # One level up, as a whole; never a MeSH grouping heading ("Neoplasms by Site"), which names no
                # disease a trial is for.
                if up not in headings and up not in broader and " by " not in up:
                    broader.append(up)
                    alts.extend(vocab.whole_names(up, rest))
    return Expansion(text, _minimal(alts)[:MAX_ALTERNATIVES], tuple(headings), tuple(dict.fromkeys(named)),
                     tuple(b for b in broader if b not in headings))


# ---- SQL ----------------------------------------------------------------------------------------------------
def like_contains(text: str) -> str:
    """LIKE pattern of every text that contains `text` (its backslashes, % and _ escaped)."""
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def like_prefilter(expansion: Expansion) -> list[str]:
    """LIKE patterns one of which every matching term contains (one word of each alternative, every written
    form of it): a cheap test that spares splitting the terms that cannot match."""
    out: set[str] = set()
    for a in expansion.alternatives:
        word = max(a.words, key=len)
        for member in _GROUP_OF.get(word, (word,)):
            stem = member[:-1] if member.endswith("y") else member  # "allergy" is written "allergies" too
            out.add(like_contains(stem))
    return sorted(out)


def match_sql(words_expr: str, expansion: Expansion, params: dict[str, Any], prefix: str, *,
              which: str = "all") -> str:
    """SQL: a term whose word array is `words_expr` matches one of the alternatives (arrays bound as parameters;
    `&&`, `@>` and `<@` tests, so a GIN index on a stored word array serves them). `which`: "all", "narrow"
    (without the broader disease as a whole: for MeSH terms and keywords) or "broader" (only it)."""
    alts = [(i, a) for i, a in enumerate(expansion.alternatives)
            if which == "all" or (which == "broader") == bool(a.within)]
    ors: list[str] = []
    single = sorted({f for _, a in alts if not a.whole and not a.within and len(a.words) == 1
                     for f in forms(a.words[0])})
    if single:
        params[f"{prefix}_any"] = single
        ors.append(f"{words_expr} && CAST(:{prefix}_any AS text[])")
    within: dict[frozenset[str], str] = {}  # one parameter per distinct word set
    for i, a in alts:
        if a.whole:
            params[f"{prefix}_{i}"] = forms(a.words[0])
            ors.append(f"({words_expr} && CAST(:{prefix}_{i} AS text[]) "
                       f"AND cardinality(array_remove({words_expr}, '')) = 1)")
        elif len(a.words) > 1 or a.within:
            parts = []
            for j, w in enumerate(a.words):
                params[f"{prefix}_{i}_{j}"] = forms(w)
                parts.append(f"{words_expr} && CAST(:{prefix}_{i}_{j} AS text[])")
            if a.within:
                name = within.setdefault(a.within, f"{prefix}_w{len(within)}")
                params[name] = sorted(a.within)
                params[name + "n"] = sorted(a.within | STAGE_NUMBERS)
                params[f"{prefix}_stage"] = list(STAGE_WORDS)
                bare = f"array_remove({words_expr}, '')"
                parts.append(f"({bare} <@ CAST(:{name} AS text[]) OR ({words_expr} && CAST(:{prefix}_stage AS text[])"
                             f" AND {bare} <@ CAST(:{name}n AS text[])))")
            ors.append("(" + " AND ".join(parts) + ")")
    return " OR ".join(ors) if ors else "FALSE"
