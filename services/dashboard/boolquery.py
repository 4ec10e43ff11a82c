"""AND / OR / NOT, parentheses and quoted phrases in the condition, intervention and free-text boxes.

The syntax is ClinicalTrials.gov's (classic.clinicaltrials.gov/api/gui/ref/syntax, /ref/expr): operators in
capitals; precedence from highest to lowest: a term or "quoted phrase", NOT (unary, on what follows it), AND
(also implied between two terms, so `cancer NOT breast` is cancer AND NOT breast), OR; parentheses group.
Words written next to each other with no operator between them are one term ("breast cancer": the condition
box resolves it as a whole to its MeSH heading). A lone term in a box with no operator is what the box always
did.

One rule of English the condition box adds (`share_heads`): in "lung OR breast cancer", a one-word term that
names no disease on its own, OR-ed with a longer term, borrows the longer term's last words ("lung cancer" OR
"breast cancer"); "type 1 OR type 2 diabetes" likewise reads "type 1 diabetes" OR "type 2 diabetes". Quote the
word to keep it alone.

Each term becomes a SELECT of NCT ids (the box's own matching); the tree becomes UNION / INTERSECT / EXCEPT of
them, so the SQL engine and the in-process engine (which runs the same SELECT in the database) find the same
studies.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

OPERATORS = ("AND", "OR", "NOT")
MAX_TERMS = 12  # terms of one expression that count (later ones are dropped)
_TOKEN = re.compile(r'"([^"]*)"?|(\()|(\))|([^\s()"]+)')


@dataclass(frozen=True)
class Term:
    """A search term: words as typed (a phrase when quoted)."""

    text: str
    quoted: bool = False


@dataclass(frozen=True)
class Op:
    """An operator over its operands: AND, OR (two or more), NOT (one)."""

    op: str
    parts: tuple[Node, ...]


Node = Term | Op


def tokens(text: str) -> list[tuple[str, str]]:
    """(kind, value) pairs: ("term", words), ("phrase", words), ("op", AND/OR/NOT), ("(", ""), (")", "")."""
    out: list[tuple[str, str]] = []
    for m in _TOKEN.finditer(text):
        phrase, opening, closing, word = m.groups()
        if phrase is not None:
            if phrase.strip():
                out.append(("phrase", " ".join(phrase.split())))
        elif opening:
            out.append(("(", ""))
        elif closing:
            out.append((")", ""))
        elif word in OPERATORS:
            out.append(("op", word))
        elif out and out[-1][0] == "term":  # words next to each other: one term
            out[-1] = ("term", f"{out[-1][1]} {word}")
        else:
            out.append(("term", word))
    return out


class _Parser:
    def __init__(self, toks: list[tuple[str, str]]) -> None:
        self.toks, self.i = toks, 0

    def peek(self) -> tuple[str, str] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> tuple[str, str]:
        self.i += 1
        return self.toks[self.i - 1]

    def expr(self) -> Node | None:
        parts = [p for p in [self.and_expr()] if p is not None]
        while self.peek() == ("op", "OR"):
            self.take()
            part = self.and_expr()
            if part is not None:
                parts.append(part)
        return _join("OR", parts)

    def and_expr(self) -> Node | None:
        parts: list[Node] = []
        while (tok := self.peek()) is not None and tok not in (("op", "OR"), (")", "")):
            if tok == ("op", "AND"):
                self.take()
                continue
            part = self.unary()
            if part is not None:
                parts.append(part)
        return _join("AND", parts)

    def unary(self) -> Node | None:
        kind, value = self.take()
        if kind == "op" and value == "NOT":
            if self.peek() is None or self.peek() in (("op", "OR"), (")", "")):
                return None  # a NOT with nothing after it says nothing
            inner = self.unary()
            return None if inner is None else Op("NOT", (inner,))
        if kind == "(":
            inner = self.expr()
            if self.peek() == (")", ""):
                self.take()
            return inner
        if kind == ")":  # an unmatched closing bracket: skipped
            return None
        return Term(value, quoted=kind == "phrase")


def _join(op: str, parts: list[Node]) -> Node | None:
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else Op(op, tuple(parts))


def parse(text: str) -> Node | None:
    """The expression of a box's text (None when it holds no term)."""
    parser = _Parser(tokens(text))
    parts = []
    while parser.peek() is not None:
        node = parser.expr()
        if node is not None:
            parts.append(node)
        if parser.peek() == (")", ""):  # an unmatched closing bracket: skipped
            parser.take()
    return _join("OR", parts)


def is_compound(text: str) -> bool:
    """Whether the text uses an operator, a quote or brackets (else it is one term, as before)."""
    return any(kind != "term" for kind, _ in tokens(text))


def terms(node: Node | None) -> list[Term]:
    """The terms of an expression, left to right."""
    if node is None:
        return []
    if isinstance(node, Term):
        return [node]
    return [t for p in node.parts for t in terms(p)]


def share_heads(node: Node | None, names_something: Callable[[str], bool]) -> Node | None:
    """The condition box's reading of "lung OR breast cancer": in an OR, an unquoted term of fewer words than
    the longest term of that OR, that names nothing alone (`names_something`), takes that term's words beyond
    its own length ("lung" + "breast cancer" → "lung cancer"; "type 1" + "type 2 diabetes" → "type 1
    diabetes")."""
    if node is None or isinstance(node, Term):
        return node
    parts = tuple(p for p in (share_heads(p, names_something) for p in node.parts) if p is not None)
    if node.op == "OR":
        longest = max(
            (p for p in parts if isinstance(p, Term) and not p.quoted),
            key=lambda t: len(t.text.split()),
            default=None,
        )
        if longest is not None:
            words = longest.text.split()
            parts = tuple(
                Term(" ".join([*p.text.split(), *words[len(p.text.split()) :]]))
                if isinstance(p, Term)
                and not p.quoted
                and len(p.text.split()) < len(words)
                and not names_something(p.text)
                else p
                for p in parts
            )
    return Op(node.op, parts)


def describe(node: Node | None) -> str:
    """The expression as read, with brackets where they matter ("lung cancer" OR "breast cancer")."""
    if node is None:
        return ""
    if isinstance(node, Term):
        return f"“{node.text}”"
    if node.op == "NOT":
        return f"NOT {describe(node.parts[0])}"
    inner = [describe(p) if isinstance(p, Term) or p.op == "NOT" else f"({describe(p)})" for p in node.parts]
    return f" {node.op} ".join(inner)


def ids_sql(
    node: Node | None,
    params: dict[str, Any],
    term_sql: Callable[[Term, dict[str, Any], str], str | None],
    prefix: str,
    universe: str,
) -> str | None:
    """SELECT of the NCT ids an expression selects: each term's SELECT (`term_sql(term, params, its prefix)`,
    None when the term selects nothing), combined with UNION / INTERSECT / EXCEPT; `universe` is the SELECT of
    every study (what a leading NOT removes from). None when the expression selects nothing at all."""
    counter = iter(range(MAX_TERMS * 4))

    def walk(n: Node) -> str:
        if isinstance(n, Term):
            sub = term_sql(n, params, f"{prefix}{next(counter)}")
            return f"({sub})" if sub else "(SELECT NULL::varchar AS nct_id WHERE FALSE)"
        if n.op == "NOT":
            return f"({universe} EXCEPT {walk(n.parts[0])})"
        positive = [p for p in n.parts if not (isinstance(p, Op) and p.op == "NOT")]
        negative = [p.parts[0] for p in n.parts if isinstance(p, Op) and p.op == "NOT"]
        if n.op == "OR" or not positive:
            body = f" {'UNION' if n.op == 'OR' else 'INTERSECT'} ".join(walk(p) for p in n.parts)
            return f"({body})"
        body = " INTERSECT ".join(walk(p) for p in positive)
        for p in negative:  # A AND NOT B: A EXCEPT B, no pass over every study
            body = f"({body}) EXCEPT {walk(p)}"
        return f"({body})"

    if node is None or not terms(node):
        return None
    return f"SELECT nct_id FROM {walk(cut(node))} q"


def cut(node: Node) -> Node:
    """The expression with at most MAX_TERMS terms (later ones dropped)."""
    budget = [MAX_TERMS]

    def keep(n: Node) -> Node | None:
        if isinstance(n, Term):
            budget[0] -= 1
            return n if budget[0] >= 0 else None
        parts = [p for p in (keep(p) for p in n.parts) if p is not None]
        if not parts:
            return None
        return Op(n.op, tuple(parts)) if n.op == "NOT" or len(parts) > 1 else parts[0]

    return keep(node) or Term("")
