"""MeSH 2024 as the one condition vocabulary: a text → descriptors through entry terms; the tree for broader/narrower.

Data: data/mesh/ (NLM's MeSH 2024, see its PROVENANCE.md), plus three small project tables there, each row with its
source: `top_headings.csv` (the category headings whose top-level tree numbers the reshaped files lack),
`project_terms.csv` (clinical abbreviations MeSH does not carry), `spellings.csv` (British spellings) and
`attribute_trees.csv` (subtrees of headings that say how a disease behaves — Recurrence, Neoplasm Metastasis — not
which disease: such a heading counts only when a text names nothing else) and `extra_parents.csv` (a parent link
the clinical classification has and MeSH's tree lacks: lung adenocarcinoma is a non-small cell lung cancer).

Matching rules (one place, used by every path):
- a term is compared as its folded words: case, accents, possessive "'s", plural, hyphens and punctuation, British
  spellings and the Roman numerals I–IV ("type II diabetes" = "type 2 diabetes") folded away; "the", "a", "an" and
  "with" are not compared;
- a whole condition name also matches an entry term with the same words in another order ("Cancer of the breast" is
  not needed: "Heart failure with preserved ejection fraction" = "Heart Failure, Preserved Ejection Fraction");
- an abbreviation (MeSH lexical tag ABB/ACR, or a project row) counts only as written in capitals, and an ambiguous
  one (a project row marked `whole`, or one MeSH gives several meanings) only as a whole condition name;
- a broader heading includes every narrower one through tree numbers; a descriptor with several tree numbers sits
  under each of its parents (polyhierarchy).
"""

from __future__ import annotations

import bisect
import csv
import gc
import gzip
import re
import threading
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[2] / "data" / "mesh"
MAX_TERM_WORDS = 12  # longest entry term compared in running text (longer ones are chemical names)
DISEASES = ("C", "F03")  # tree prefixes of diseases and mental disorders
_IGNORED = frozenset(("the", "a", "an", "with"))
_ROMAN = {"i": "1", "ii": "2", "iii": "3", "iv": "4"}
_APOSTROPHES = "'’´`ʼ"  # a possessive is written with any of these ("Alzheimer´s")
_TOKEN = re.compile(rf"[^\W_]+(?:[{_APOSTROPHES}]s\b)?", re.UNICODE)
_ABBREVIATION_TAGS = frozenset(("ABB", "ACR"))
_EPONYM_TAG = "EPO"


@dataclass(frozen=True)
class Descriptor:
    """One MeSH heading: its id (D…), preferred name and tree numbers."""

    ui: str
    name: str
    trees: tuple[str, ...]


@dataclass(frozen=True)
class Mention:
    """A stretch of text that names a descriptor: characters [start, end) of the text, the words matched."""

    ui: str
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class _Token:
    word: str  # folded
    raw: str  # as written
    start: int
    end: int


def _fold_word(raw: str, spellings: dict[str, str]) -> str:
    w = raw.lower()
    if len(w) > 2 and w[-1] == "s" and w[-2] in _APOSTROPHES:  # before NFKD, which splits "´" off as a space
        w = w[:-2]
    w = unicodedata.normalize("NFKD", w)
    w = "".join(c for c in w if not unicodedata.combining(c) and not c.isspace())
    w = spellings.get(w, w)
    w = _ROMAN.get(w, w)
    if len(w) >= 5:
        if w.endswith("ies"):
            return w[:-3] + "y"
        if w.endswith(("sses", "uses")):
            return w[:-2]
        if w.endswith("s") and not w.endswith(("ss", "us", "is")):
            return w[:-1]
    return w


def _read_tsv(name: str) -> Iterator[dict[str, str]]:
    with gzip.open(DATA_DIR / name, "rt", encoding="utf-8", newline="") as fh:
        yield from csv.DictReader(fh, delimiter="\t")


def read_csv(name: str) -> list[dict[str, str]]:
    """The rows of one of the project's small tables in data/mesh/."""
    with open(DATA_DIR / name, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


class Mesh:
    """The loaded vocabulary: descriptors, the term indexes and the tree."""

    def __init__(self) -> None:
        self.spellings = {r["written"]: r["as_mesh"] for r in read_csv("spellings.csv")}
        top = {r["descriptor_ui"]: r["tree_number"] for r in read_csv("top_headings.csv")}
        self.descriptors: dict[str, Descriptor] = {}
        for r in _read_tsv("descriptors.tsv.gz"):
            trees = tuple(t for t in r["tree_numbers"].split(";") if t) or ((top[r["descriptor_ui"]],)
                                                                            if r["descriptor_ui"] in top else ())
            self.descriptors[r["descriptor_ui"]] = Descriptor(r["descriptor_ui"], r["name"], trees)
        self.by_name = {d.name.lower(): d.ui for d in self.descriptors.values()}
        self._trees = sorted((t, d.ui) for d in self.descriptors.values() for t in d.trees)
        self._tree_keys = [t for t, _ in self._trees]
        self._ui_of_tree = dict(self._trees)
        self._narrow_memo: dict[str, frozenset[str]] = {}
        # words → descriptors: running-text terms, whole-name terms, abbreviations (as written, upper case)
        self.terms: dict[tuple[str, ...], set[str]] = {}
        self.bags: dict[frozenset[str], set[str]] = {}
        self.abbreviations: dict[str, set[str]] = {}
        self.whole_only: dict[str, set[str]] = {}
        self.entry_terms: dict[str, list[str]] = {}  # descriptor → its entry terms as written
        heads = {r["head"] for r in read_csv("eponym_heads.csv")}
        self.eponyms: dict[str, set[str]] = {}  # "alzheimer" → Alzheimer Disease (eponym_heads.csv)
        self._eponym_terms: dict[str, set[tuple[str, bool]]] = {}
        for r in _read_tsv("terms.tsv.gz"):
            self._add_term(r["term"], r["descriptor_ui"], r["lexical_tag"] in _ABBREVIATION_TAGS)
            if r["lexical_tag"] == _EPONYM_TAG:
                self._add_eponym(r["term"], r["descriptor_ui"], heads)
        for r in read_csv("project_terms.csv"):
            ui = self.by_name[r["descriptor"].lower()]
            if r["match"] == "whole":
                self.whole_only.setdefault(r["term"].upper(), set()).add(ui)
            else:
                self._add_term(r["term"], ui, abbreviation=r["match"] == "word")
        for name, named in self._eponym_terms.items():
            if len({ui for ui, _ in named}) == 1 and any(by_head for _, by_head in named):
                self.eponyms[name] = {ui for ui, _ in named}
        for abbr, uis in list(self.abbreviations.items()):
            if len(uis) > 1:  # MeSH gives it several meanings: only a whole name can say which
                self.whole_only.setdefault(abbr, set()).update(uis)
                del self.abbreviations[abbr]
        self.attribute_trees = tuple(r["tree_number"] for r in read_csv("attribute_trees.csv"))
        self.extra_children: dict[str, set[str]] = {}
        self.extra_parents: dict[str, set[str]] = {}
        for r in read_csv("extra_parents.csv"):
            child, parent = self.by_name[r["descriptor"].lower()], self.by_name[r["parent"].lower()]
            self.extra_children.setdefault(parent, set()).add(child)
            self.extra_parents.setdefault(child, set()).add(parent)
        self.actions: dict[str, tuple[str, ...]] = {}
        for r in _read_tsv("pharmacological_actions.tsv.gz"):
            self.actions[r["descriptor_ui"]] = (*self.actions.get(r["descriptor_ui"], ()), r["action_ui"])

    # ---- words --------------------------------------------------------------------------------------------
    def tokens(self, text: str) -> list[_Token]:
        """The words of a text with their places, folded; ignored words left out."""
        out = []
        for m in _TOKEN.finditer(text):
            w = _fold_word(m.group(), self.spellings)
            if w and w not in _IGNORED:
                out.append(_Token(w, m.group(), m.start(), m.end()))
        return out

    def words(self, text: str) -> tuple[str, ...]:
        """The compared words of a text, in order."""
        return tuple(t.word for t in self.tokens(text))

    def _add_term(self, term: str, ui: str, abbreviation: bool) -> None:
        self.entry_terms.setdefault(ui, []).append(term.strip())
        if abbreviation and " " not in term.strip():
            self.abbreviations.setdefault(term.strip().upper(), set()).add(ui)
            if "-" not in term:  # "B-ALL" is also read as its words, which running text splits at the hyphen
                return
        key = self.words(term)
        if not key:
            return
        if len(key) <= MAX_TERM_WORDS:
            self.terms.setdefault(key, set()).add(ui)
        self.bags.setdefault(frozenset(key), set()).add(ui)

    def _add_eponym(self, term: str, ui: str, heads: set[str]) -> None:
        """Note "<Name>'s <head>" / "<Name> <head>" (an EPO entry term of two words whose second is a head
        noun of eponym_heads.csv): the possessive "<Name>'s" alone then names the descriptor."""
        toks = self.tokens(term)
        if len(toks) == 2 and toks[0].raw[:1].isupper() and "," not in term:
            # (ui, named by a head noun): another descriptor after any noun ("Kaposi's sarcoma") is ambiguous
            self._eponym_terms.setdefault(toks[0].word, set()).add((ui, toks[1].word in heads))

    def _eponym(self, token: _Token) -> set[str]:
        """The descriptor an eponym's possessive names ("Alzheimer's"), else nothing; only when written with
        the possessive, so a bare surname names no disease."""
        if token.raw[-2:-1] in _APOSTROPHES and token.raw[-1:] == "s":
            return self.eponyms.get(token.word, set())
        return set()

    # ---- the tree -----------------------------------------------------------------------------------------
    def name(self, ui: str) -> str:
        """The descriptor's preferred heading."""
        return self.descriptors[ui].name

    def in_category(self, ui: str, prefixes: Iterable[str] = DISEASES) -> bool:
        """Whether one of the descriptor's tree numbers lies in one of the categories (tree prefixes)."""
        pre = tuple(prefixes)
        return any(t.startswith(pre) for t in self.descriptors[ui].trees)

    def narrower(self, ui: str) -> frozenset[str]:
        """The descriptor and every descriptor below it, under any of its tree numbers."""
        if ui not in self._narrow_memo:
            out = {ui}
            for t in self.descriptors[ui].trees:
                lo = bisect.bisect_left(self._tree_keys, t + ".")
                hi = bisect.bisect_left(self._tree_keys, t + "/")  # "/" sorts right after "."
                out.update(u for _, u in self._trees[lo:hi])
            for child in {c for u in out for c in self.extra_children.get(u, ())} - out:
                out |= self.narrower(child)
            self._narrow_memo[ui] = frozenset(out)
        return self._narrow_memo[ui]

    def broader(self, ui: str) -> frozenset[str]:
        """The descriptor and every descriptor above it, along every tree number (polyhierarchy)."""
        out = {ui}
        for t in self.descriptors[ui].trees:
            parts = t.split(".")
            for i in range(1, len(parts)):
                parent = self._ui_of_tree.get(".".join(parts[:i]))
                if parent:
                    out.add(parent)
        for extra in {p for u in out for p in self.extra_parents.get(u, ())} - out:
            out |= self.broader(extra)
        return frozenset(out)

    def ui_of_tree(self, tree_number: str) -> str | None:
        """The descriptor at a tree number, if any."""
        return self._ui_of_tree.get(tree_number)

    def parents(self, ui: str) -> frozenset[str]:
        """The descriptors one level up."""
        out = set()
        for t in self.descriptors[ui].trees:
            if "." in t:
                parent = self._ui_of_tree.get(t.rsplit(".", 1)[0])
                if parent:
                    out.add(parent)
        return frozenset(out | self.extra_parents.get(ui, set()))

    def related(self, a: str, b: str) -> bool:
        """Equal, or one is narrower than the other."""
        return a == b or a in self.broader(b) or b in self.broader(a)

    def depth(self, ui: str) -> int:
        """The shortest tree number's depth (C04 = 1, C04.588 = 2); 0 for a descriptor outside the tree."""
        trees = self.descriptors[ui].trees
        return min((t.count(".") + 1 for t in trees), default=0)

    # ---- from text to descriptors ------------------------------------------------------------------------
    def lookup(self, name: str, categories: Iterable[str] | None = DISEASES) -> frozenset[str]:
        """The descriptors a whole condition name means (empty when it is no entry term in any word order)."""
        stripped = name.strip()
        uis: set[str] = set()
        if stripped.upper() in self.whole_only and " " not in stripped:
            uis = set(self.whole_only[stripped.upper()])
        elif stripped.upper() in self.abbreviations and " " not in stripped:
            uis = set(self.abbreviations[stripped.upper()])
        else:
            toks = self.tokens(stripped)
            key = tuple(t.word for t in toks)
            uis = set(self.terms.get(key, ())) or set(self.bags.get(frozenset(key), ()))
            if not uis and len(toks) == 1:  # a whole name of one eponym means its disease, possessive or not
                uis = set(self.eponyms.get(toks[0].word, ()))
        return self._keep(uis, categories)

    def _keep(self, uis: Iterable[str], categories: Iterable[str] | None) -> frozenset[str]:
        if categories is None:
            return frozenset(uis)
        cats = tuple(categories)
        return frozenset(u for u in uis if self.in_category(u, cats))

    def mentions(self, text: str, categories: Iterable[str] | None = DISEASES) -> list[Mention]:
        """The descriptors named in running text: at each word the longest entry term that starts there (an
        abbreviation only as written in capitals), left to right, without overlaps."""
        cats = None if categories is None else tuple(categories)
        toks = self.tokens(text)
        out: list[Mention] = []
        i = 0
        while i < len(toks):
            found = None
            for n in range(min(MAX_TERM_WORDS, len(toks) - i), 0, -1):
                uis = self.terms.get(tuple(t.word for t in toks[i:i + n]))
                if uis and (kept := self._keep(uis, cats)):
                    found = (n, kept)
                    break
            if found is None and _capitals(toks[i].raw) and toks[i].raw.upper() in self.abbreviations:
                kept = self._keep(self.abbreviations[toks[i].raw.upper()], cats)
                found = (1, kept) if kept else None
            if found is None and (kept := self._keep(self._eponym(toks[i]), cats)):
                found = (1, kept)
            if found is None:
                i += 1
                continue
            n, kept = found
            start, end = toks[i].start, toks[i + n - 1].end
            out.extend(Mention(ui, start, end, text[start:end]) for ui in sorted(kept))
            i += n
        return out

    def resolve(self, name: str, categories: Iterable[str] | None = DISEASES) -> frozenset[str]:
        """A condition name's descriptors: the whole name when it is a term, else every term named in it, keeping
        the narrowest (a name that mentions "breast cancer" and "breast" neoplasms keeps the breast cancer)."""
        whole = self.lookup(name, categories)
        if whole:
            return whole
        return self.narrowest({m.ui for m in self.mentions(name, categories)})

    def is_attribute(self, ui: str) -> bool:
        """Whether the heading says how a disease behaves (attribute_trees.csv), not which disease it is."""
        return all(t.startswith(self.attribute_trees) for t in self.descriptors[ui].trees)

    def narrowest(self, found: Iterable[str]) -> frozenset[str]:
        """The headings without a narrower one among them, attributes ("Disease", "Recurrence") left out: inside a
        longer text they name no disease ("no such disease anywhere" is no search for the heading Disease); typed
        alone, the whole-name lookup finds them."""
        diseases = {u for u in found if not self.is_attribute(u)}
        return frozenset(u for u in diseases if not any(o != u and u in self.broader(o) for o in diseases))

    def expand(self, uis: Iterable[str]) -> frozenset[str]:
        """The descriptors and every narrower one."""
        out: set[str] = set()
        for u in uis:
            out |= self.narrower(u)
        return frozenset(out)


def _capitals(raw: str) -> bool:
    letters = [c for c in raw if c.isalpha()]
    return len(letters) >= 2 and sum(c.isupper() for c in letters) >= len(letters) - 1 and raw[:1].isupper()


_loading = threading.Lock()


@cache
def _loaded() -> Mesh:
    mesh = Mesh()
    # The vocabulary lives as long as the process: ~480,000 sets that every full garbage collection would walk
    # again (0.2-0.5 s each; the facet store's load makes ten). Frozen, collections skip them; they are still
    # freed by reference counting if ever dropped. Collected first: no garbage of the load is frozen with it.
    gc.collect()
    gc.freeze()
    return mesh


def vocabulary() -> Mesh:
    """The vocabulary, loaded once per process (about 3.6 s): one load at a time, so a caller arriving while the
    background warm-up (services/data/studymesh.warm_up) loads it waits for that load instead of starting another."""
    with _loading:
        return _loaded()
