"""The one condition model: what a typed condition means, for Explore, Map, Trials, Compare and the assistant alike.

A typed condition resolves to MeSH 2024 descriptors (services/vocab/mesh.py: entry terms, abbreviations, word order
and spelling variants) and matches every study that carries one of them or a narrower one through the tree
(polyhierarchy respected). A study's descriptors are its browse_conditions rows (mesh-list, mesh-ancestor) and its
condition names resolved the same way (app.study_mesh, built by services/data/studymesh.py). A text that resolves
to nothing keeps the plain word match: a condition name containing every typed word (case, possessive and plural
folded), with no hand-made expansion.

SQL for both engines (`ids_sql`): app.study_mesh when the database has it; else, on AACT's base tables, the MeSH
headings of browse_conditions and condition names written exactly as an entry term of the descriptors.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from services.dashboard import boolquery
from services.data import studymesh
from services.vocab import areas as area_vocab
from services.vocab import mesh as mesh_vocab

MAX_WORDS = 12  # words of a typed condition that count
MAX_TERMS = 20_000  # entry terms bound for the base-table match (a whole category's names)

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


def forms(word: str) -> list[str]:
    """Every written word whose folded form is `word` (singular and plural)."""
    out = [word, word + "s", word + "es"]
    if word.endswith("y"):
        out.append(word[:-1] + "ies")
    return sorted(f for f in dict.fromkeys(out) if fold(f) == word)


def pg_word_pattern(word: str) -> str:
    """PostgreSQL regex: the word as a whole word in any of its written forms."""
    body = "|".join(re.escape(f) for f in sorted(forms(word), key=lambda f: (-len(f), f)))
    return r"\m(?:" + body + ")" + _POSSESSIVE + r"\M"


def like_contains(text: str) -> str:
    """LIKE pattern of every text that contains `text` (its backslashes, % and _ escaped)."""
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


@dataclass(frozen=True)
class Concept:
    """A typed condition: the descriptors it names, them and every narrower one, and its folded words."""

    text: str
    named: tuple[str, ...]  # descriptor ids the text resolves to (sorted)
    descriptors: frozenset[str]  # named and every narrower one
    words: tuple[str, ...]  # the typed words, folded (the plain match when `named` is empty)

    @property
    def searchable(self) -> bool:
        """Whether the text selects anything at all (a concept or at least one word)."""
        return bool(self.named or self.words)

    def caption(self) -> str | None:
        """What the sidebar says: "breast cancer → Breast Neoplasms and 8 narrower headings"."""
        if not self.searchable:
            return None
        if not self.named:
            return f"{self.text.strip()[:80]} → no MeSH heading; condition names with these words"
        m = mesh_vocab.vocabulary()
        heads = " and ".join(m.name(u) for u in self.named[:3]) + (" …" if len(self.named) > 3 else "")
        more = len(self.descriptors) - len(self.named)
        tail = f" and {more} narrower heading{'s' if more != 1 else ''}" if more else ""
        return f"{self.text.strip()[:80]} → {heads}{tail}"

    def headings_lower(self) -> list[str]:
        """The preferred headings of every descriptor, lower case (browse_conditions' downcase_mesh_term)."""
        m = mesh_vocab.vocabulary()
        return sorted({m.name(u).lower() for u in self.descriptors})

    def terms_lower(self) -> list[str]:
        """Every entry term of every descriptor, lower case (condition names written exactly as one)."""
        m = mesh_vocab.vocabulary()
        out = {t.lower() for u in self.descriptors for t in m.entry_terms.get(u, ())}
        return sorted(out | set(self.headings_lower()))[:MAX_TERMS]

    def matches_name(self, name: str) -> bool:
        """Whether one condition name matches (resolved to a descriptor of the concept, or has every word)."""
        if self.named:
            return bool(mesh_vocab.vocabulary().resolve(name) & self.descriptors)
        have = set(words(name))
        return bool(self.words) and all(w in have for w in self.words)

    def matches_heading(self, term: str) -> bool:
        """Whether one MeSH heading (a browse_conditions term) is one of the concept's descriptors."""
        if not self.named:
            return False
        m = mesh_vocab.vocabulary()
        ui = m.by_name.get(term.lower())
        return bool((frozenset((ui,)) if ui else m.lookup(term, None)) & self.descriptors)

    def matches_trial(self, conditions: Iterable[str], others: Iterable[str]) -> bool:
        """Whether a trial matches by its condition names or, for a concept, by its MeSH headings and keywords
        (`others`: a heading by name, a keyword resolved as a name is)."""
        if any(self.matches_name(c) for c in conditions if c):
            return True
        return bool(self.named) and any(self.matches_heading(t) or self.matches_name(t) for t in others if t)


@lru_cache(maxsize=1024)
def expand(text: str, narrower: bool = True) -> Concept:
    """The concept of a typed condition (cached; the vocabulary loads once per process)."""
    typed = tuple(dict.fromkeys(words(text)))[:MAX_WORDS]
    if not typed:
        return Concept(text, (), frozenset(), ())
    m = mesh_vocab.vocabulary()
    area = area_vocab.named_by(text[:400])  # "oncology", "cardiology": the area's MeSH heading
    named = frozenset((area.root(),)) if area else m.resolve(text[:400])
    # narrower=False: the named headings alone, without the ones below them (the sidebar's switch)
    return Concept(text, tuple(sorted(named)), m.expand(named) if narrower else frozenset(named), typed)


def parsed(text: str) -> boolquery.Node | None:
    """The typed condition as an expression (services/dashboard/boolquery.py), "lung OR breast cancer" read as
    "lung cancer" OR "breast cancer" (a one-word term that names no heading shares the longer term's last
    words)."""
    return boolquery.share_heads(boolquery.parse(text), lambda t: bool(expand(t).named))


def caption(text: str) -> str | None:
    """What the sidebar says of a typed condition: one term's headings, or an expression as read with each
    term's."""
    if not boolquery.is_compound(text):
        return expand(text).caption()
    node = parsed(text)
    if node is None:
        return None
    parts = [c for t in boolquery.terms(node)[:boolquery.MAX_TERMS] if (c := expand(t.text).caption())]
    return f"Read as {boolquery.describe(node)}: " + "; ".join(parts)


def area_select_sql(names: Iterable[str], params: dict[str, Any], *, stored: bool) -> str:
    """SELECT of the NCT ids in any of the named therapeutic areas: a MeSH descriptor of the study
    (app.study_mesh, else the base tables as the condition filter reads them) lies under the area's tree
    number."""
    found = [a for a in (area_vocab.by_name(n) for n in names) if a is not None]
    roots = tuple(sorted({a.root() for a in found}))
    concept = Concept(", ".join(a.name for a in found), roots, mesh_vocab.vocabulary().expand(roots), ())
    nothing = "SELECT NULL::varchar AS nct_id WHERE FALSE"
    return ids_sql(concept, params, stored=stored, prefix="area") or nothing


def select_sql(text: str, params: dict[str, Any], *, stored: bool, prefix: str = "cond",
               narrower: bool = True) -> str | None:
    """SELECT of the NCT ids a typed condition finds — one term (ids_sql), or AND / OR / NOT of terms, each
    term resolved on its own. None when the text selects nothing."""
    if not boolquery.is_compound(text):
        return ids_sql(expand(text, narrower), params, stored=stored, prefix=prefix)
    return boolquery.ids_sql(parsed(text), params,
                             lambda t, p, pre: ids_sql(expand(t.text, narrower), p, stored=stored,
                                                     prefix=pre),
                             prefix, "SELECT st.nct_id FROM ctgov.studies st")


# ---- SQL ----------------------------------------------------------------------------------------------------
def term_match_sql(column: str, concept: Concept, params: dict[str, Any], prefix: str, *, heading: bool) -> str:
    """SQL: a lower-case term column matches on the base tables — a MeSH heading of the concept (`heading`), or a
    condition name written as one of its entry terms; without a concept, a name with every typed word."""
    if concept.named:
        name = f"{prefix}_heads" if heading else f"{prefix}_terms"
        params[name] = concept.headings_lower() if heading else concept.terms_lower()
        return f"{column} = ANY(CAST(:{name} AS text[]))"
    if heading or not concept.words:
        return "FALSE"
    parts = []
    for i, w in enumerate(concept.words):
        params[f"{prefix}_w{i}"] = pg_word_pattern(w)
        parts.append(f"{column} ~ :{prefix}_w{i}")
    return " AND ".join(parts)


def ids_sql(concept: Concept, params: dict[str, Any], *, stored: bool, prefix: str = "cond") -> str | None:
    """SELECT of the NCT ids a concept matches (None when the text selects nothing). `stored`: read app.study_mesh;
    else AACT's base tables only."""
    if not concept.searchable:
        return None
    table = "app.study_mesh" if stored else studymesh.console_view()
    if concept.named and table:
        params[f"{prefix}_uis"] = sorted(concept.descriptors)
        return f"SELECT sm.nct_id FROM {table} sm WHERE sm.descriptor_ui = ANY(CAST(:{prefix}_uis AS text[]))"
    names = ("SELECT c.nct_id FROM ctgov.conditions c WHERE "
             + term_match_sql("c.downcase_name", concept, params, prefix, heading=False))
    if not concept.named:
        return names
    return (names + "\nUNION SELECT b.nct_id FROM ctgov.browse_conditions b WHERE "
            + term_match_sql("b.downcase_mesh_term", concept, params, prefix, heading=True))
