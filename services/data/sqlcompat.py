"""AACT-style SQL for the console: schema prefixes AACT users write, and EXPLAIN.

On AACT the trial tables are `ctgov.<table>`; older queries name them `public.<table>` (before 2018 AACT kept
them in public) or `ctgov_v2.<table>` (the v2 schema's name from 2024-02 to 2024-06). Here they all mean the
tables and views of schema ctgov, so such a prefix in front of one of those names is rewritten to `ctgov`
before the query guard sees the text (only in front of a ctgov relation: `public.similarity()` and unknown
names stay as written and keep their refusals).

EXPLAIN is accepted in front of a query the guard accepts: `EXPLAIN SELECT …`, `EXPLAIN ANALYZE SELECT …`,
`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT …`. The inner statement goes through the whole guard (so
EXPLAIN ANALYZE of anything but a SELECT is refused for the reason that statement is), options are read by
PostgreSQL's parser and rebuilt from an allow-list (SETTINGS is refused: it prints server settings).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pglast
from pglast import ast

from services.data.loaders.aact_schema import TABLES
from services.errors import UnsafeQuery

SCHEMA_ALIASES = frozenset({"public", "ctgov_v2"})

# Views and functions of sql/schema/004_ctgov_views.sql (tests check the list against the database).
CTGOV_VIEWS = frozenset({
    "all_browse_conditions", "all_browse_interventions", "all_cities", "all_conditions", "all_countries",
    "all_design_outcomes", "all_facilities", "all_group_types", "all_id_information", "all_intervention_types",
    "all_interventions", "all_keywords", "all_overall_official_affiliations", "all_overall_officials",
    "all_primary_outcome_measures", "all_secondary_outcome_measures", "all_sponsors", "all_states", "categories",
    "covid_19_studies", "v_studies", "v_eligibilities", "v_interventions", "v_design_groups", "v_designs",
    "v_outcomes",
})
CTGOV_FUNCTIONS = frozenset({"ids_for_term", "ids_for_org", "classic_spelling"})
# AACT's MeSH vocabulary tables (sql/schema/075_mesh.sql), loaded from data/mesh rather than from an
# export, and the views of the app's MeSH mapping (each study's descriptors, each therapeutic area's) the
# console reads.
CTGOV_MESH_TABLES = frozenset({"mesh_terms", "mesh_headings", "study_mesh_terms", "therapeutic_area_terms"})
CTGOV_RELATIONS = frozenset(TABLES) | CTGOV_VIEWS | CTGOV_MESH_TABLES

_EXPLAIN_OPTIONS = {
    "analyze": "bool", "verbose": "bool", "costs": "bool", "buffers": "bool", "wal": "bool", "timing": "bool",
    "summary": "bool", "generic_plan": "bool", "memory": "bool",
    "format": ("text", "json", "yaml", "xml"), "serialize": ("none", "text", "binary"),
}
_TRUE_WORDS = frozenset({"true", "on", "1", "yes"})
_FALSE_WORDS = frozenset({"false", "off", "0", "no"})


def _name(text: str) -> str | None:
    """An identifier token's name as PostgreSQL reads it (quoted: as written; bare: lower-cased)."""
    if text.startswith('"'):
        return text[1:-1].replace('""', '"') if len(text) >= 2 and text.endswith('"') else None
    return text.lower()


def to_trial_schema(sql: str) -> str:
    """`public.studies`, `ctgov_v2.all_conditions` … → `ctgov.…`; everything else as written.

    Works on PostgreSQL's own lexer tokens, so text inside literals and comments is never touched.
    """
    try:
        tokens = [t for t in pglast.parser.scan(sql) if t.name not in ("SQL_COMMENT", "C_COMMENT")]
    except pglast.Error:
        return sql  # the guard reports the lexer's complaint
    pieces: list[str] = []
    cursor = 0
    for i in range(len(tokens) - 2):
        schema, dot, rel = tokens[i], tokens[i + 1], tokens[i + 2]
        if dot.name != "ASCII_46" or schema.end + 1 != dot.start or dot.end + 1 != rel.start:
            continue
        if i and tokens[i - 1].name == "ASCII_46":  # the middle of a.b.c: leave catalog-qualified names alone
            continue
        schema_name = _name(sql[schema.start:schema.end + 1])
        rel_name = _name(sql[rel.start:rel.end + 1])
        if schema_name in SCHEMA_ALIASES and rel_name in CTGOV_RELATIONS | CTGOV_FUNCTIONS:
            pieces += [sql[cursor:schema.start], "ctgov"]
            cursor = schema.end + 1
    pieces.append(sql[cursor:])
    return "".join(pieces)


@dataclass(frozen=True)
class Explain:
    """An EXPLAIN in front of a query: the options to run it with and the text of the query explained."""

    options: str
    inner: str

    def wrap(self, inner_sql: str) -> str:
        return f"EXPLAIN ({self.options}) {inner_sql}" if self.options else f"EXPLAIN {inner_sql}"


def split_explain(sql: str) -> Explain | None:
    """None unless the statement starts with EXPLAIN; else its checked options and the inner query text.

    Raises UnsafeQuery for options that are not allowed or an EXPLAIN without a query.
    """
    try:
        tokens = [t for t in pglast.parser.scan(sql) if t.name not in ("SQL_COMMENT", "C_COMMENT")]
    except pglast.Error:
        return None
    if not tokens or sql[tokens[0].start:tokens[0].end + 1].lower() != "explain":
        return None
    i = 1
    if i < len(tokens) and tokens[i].name == "ASCII_40":  # EXPLAIN ( option, … )
        depth = 0
        while i < len(tokens):
            depth += {"ASCII_40": 1, "ASCII_41": -1}.get(tokens[i].name, 0)
            i += 1
            if depth == 0:
                break
    else:  # EXPLAIN [ANALYZE] [VERBOSE]
        while i < len(tokens) and sql[tokens[i].start:tokens[i].end + 1].lower() in ("analyze", "analyse", "verbose"):
            i += 1
    if i >= len(tokens):
        raise UnsafeQuery("EXPLAIN needs the SELECT it should explain after it.")
    return Explain(_options(sql[tokens[0].end + 1:tokens[i].start]), sql[tokens[i].start:])


def _options(option_text: str) -> str:
    """Rebuild EXPLAIN's options from what PostgreSQL's parser reads in them, allowing only known ones."""
    try:
        parsed = pglast.parse_sql(f"EXPLAIN {option_text} SELECT 1")
    except pglast.Error as exc:
        raise UnsafeQuery(f"PostgreSQL cannot read these EXPLAIN options: {exc.args[0] if exc.args else exc}.") from None
    stmt = parsed[0].stmt if len(parsed) == 1 else None
    if not isinstance(stmt, ast.ExplainStmt) or not isinstance(stmt.query, ast.SelectStmt):
        raise UnsafeQuery("EXPLAIN's options could not be read; write them as EXPLAIN (ANALYZE, FORMAT JSON) SELECT …")
    out: list[str] = []
    for option in stmt.options or ():
        name = option.defname.lower()
        kind = _EXPLAIN_OPTIONS.get(name)
        if kind is None:
            why = " because it prints server settings" if name == "settings" else ""
            raise UnsafeQuery(f"EXPLAIN option {name.upper()} is not allowed{why}; "
                              f"use {', '.join(k.upper() for k in _EXPLAIN_OPTIONS)}.")
        value = _option_value(option.arg)
        if kind == "bool":
            on = value is None or value in _TRUE_WORDS
            if value is not None and value not in _TRUE_WORDS | _FALSE_WORDS:
                raise UnsafeQuery(f"EXPLAIN option {name.upper()} takes true or false, not {value}.")
            out.append(f"{name.upper()} {'true' if on else 'false'}")
        else:
            if value not in kind:
                raise UnsafeQuery(f"EXPLAIN {name.upper()} takes one of {', '.join(kind)}.")
            out.append(f"{name.upper()} {value}")
    return ", ".join(out)


def _option_value(arg: Any) -> str | None:
    if arg is None:
        return None
    for attr in ("sval", "ival", "boolval"):
        value = getattr(arg, attr, None)
        if value is not None:
            inner = getattr(value, "sval", None) or getattr(value, "ival", None) or getattr(value, "boolval", value)
            return str(inner).lower()
    return str(arg).lower()
