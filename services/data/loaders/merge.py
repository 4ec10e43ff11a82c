"""Staged studies into ctgov without losing data: per study, the newer and fuller record wins, table by table.

Every importer copies what it read into temporary staging tables (`_s_<table>`, typed like ours, plus `_new`,
the id a referenced row gets from our sequence) and provenance rows into `_s_sources`, inside one transaction
(services/data/loaders/bulk.py). `merge` then decides per study (sql/queries/import_decide.sql): a new study,
a record not older than ours, or a full record over our partial one replaces ours in every table the source
carries; otherwise ours is kept and only the tables where ours has no rows are added ("enriched"). A table the
source does not carry (an AACT export without facilities.txt) is never touched. `replace=True` (`--replace`)
takes the source's record whatever the dates, still only in the tables it carries."""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from services.data.db import SQL_DIR, load_sql
from services.data.loaders import sources
from services.data.loaders.bulk import Session
from services.data.loaders.common import ID_TABLES, REFERENCES

CAPS = Path(__file__).resolve().parents[3] / "data" / "ctgov" / "text_caps.csv"
MAX_LISTED = 1_000  # studies listed one by one in a report (the counts cover all)
_SEQUENCE = re.compile(r'^[a-z_][a-z0-9_]*\.("?)[a-z_][a-z0-9_]*\1$')
SCHEMA_DIR = SQL_DIR / "schema"
# The indexes of sql/schema/002_ctgov_indexes.sql, dropped and built again when an import is mostly new
# studies.
_INDEX_DDL = (SCHEMA_DIR / "002_ctgov_indexes.sql").read_text(encoding="utf-8")
_INDEX_NAMES = re.compile(r"CREATE (?:UNIQUE )?INDEX IF NOT EXISTS (\w+) ON ctgov\.")
# (table, column) → the ID table that column points at.
_TARGET = {(table, col): target for target, refs in REFERENCES.items() for table, col in refs}

# progress(what, count): a table's rows copied, merged, or a step of the refresh.
Progress = Callable[[str, int], None]


@dataclass(frozen=True)
class Layout:
    """Our ctgov tables as the database has them: column → type per table, and each ID table's sequence."""

    types: dict[str, dict[str, str]]
    sequences: dict[str, str]


@dataclass(frozen=True)
class Outcome:
    """What the merge did: studies per action, the first MAX_LISTED studies with their reason, rows per table.
    """

    counts: dict[str, int]
    studies: tuple[dict[str, Any], ...]
    rows: dict[str, int]
    cut: dict[str, int] = field(default_factory=dict)  # "table.column" → values cut to their limit


@dataclass(frozen=True)
class TextCap:
    """The longest text an import stores in one field (data/ctgov/text_caps.csv)."""

    table: str
    column: str
    max_chars: int


@cache
def text_caps() -> tuple[TextCap, ...]:
    """The rows of data/ctgov/text_caps.csv."""
    with open(CAPS, encoding="utf-8", newline="") as fh:
        return tuple(TextCap(r["table"], r["column"], int(r["max_chars"])) for r in csv.DictReader(fh))


def cut_mark(limit: int) -> str:
    """What follows a value cut to `limit` characters."""
    return f" … [cut at {limit:,} characters]"


def cap_text(session: Session, carried: dict[str, list[str]]) -> dict[str, int]:
    """Cut the staged values longer than their limit, with the mark; how many per field."""
    cut: dict[str, int] = {}
    for cap in text_caps():
        if cap.column not in carried.get(cap.table, ()):
            continue
        status = session.execute(f'UPDATE "_s_{cap.table}" SET "{cap.column}" = left("{cap.column}", $1) || $2 '
                                 f'WHERE length("{cap.column}") > $1', cap.max_chars, cut_mark(cap.max_chars))
        if int(status.split()[-1]):
            cut[f"{cap.table}.{cap.column}"] = int(status.split()[-1])
    return cut


def layout(session: Session) -> Layout:
    """Read our tables' columns, types and id sequences."""
    types: dict[str, dict[str, str]] = {}
    sequences: dict[str, str] = {}
    for r in session.fetch(load_sql("import_ctgov_columns")):
        types.setdefault(r["table_name"], {})[r["column_name"]] = r["type"]
        if r["sequence"] and r["table_name"] in ID_TABLES and _SEQUENCE.match(r["sequence"]):
            sequences[r["table_name"]] = r["sequence"]
    # Only the studies' own tables: the MeSH vocabulary tables (mesh_terms, mesh_headings) have no nct_id and
    # are loaded from data/mesh, never from an export.
    types = {t: cols for t, cols in types.items() if "nct_id" in cols}
    return Layout(types, sequences)


def begin(session: Session) -> None:
    """The merge's own temporary tables: decisions, tables added to kept studies, incoming provenance rows."""
    session.execute("CREATE TEMP TABLE _decide (nct_id varchar PRIMARY KEY, take boolean NOT NULL, "
                    "action text, "
                    "reason text) ON COMMIT DROP;\n"
                    "CREATE TEMP TABLE _enriched (nct_id varchar, tbl text, PRIMARY KEY (nct_id, tbl)) "
                    "ON COMMIT DROP;\n"
                    "CREATE TEMP TABLE _s_sources (LIKE app.study_sources) ON COMMIT DROP")


def create_stage(session: Session, table: str, lay: Layout, extra: Iterable[str] = ()) -> str:
    """CREATE the staging table of `table` (every column of ours, typed, no constraints); its quoted name."""
    name = f'"_s_{table}"'
    cols = [f'"{c}" {t}' for c, t in lay.types[table].items()] + list(extra)
    if table in lay.sequences:
        cols.append(f"_new integer DEFAULT nextval('{lay.sequences[table]}'::regclass)")
    session.execute(f"CREATE TEMP TABLE {name} ({', '.join(cols)}) ON COMMIT DROP")
    return name


def _kept_table(table: str, alias: str = "s") -> str:
    """SQL: this staged row's study takes the source's rows of `table` (taken, or the table added to it)."""
    return (f"(d.take OR EXISTS (SELECT 1 FROM _enriched e WHERE e.nct_id = {alias}.nct_id "
            f"AND e.tbl = '{table}'))")


def _insert_sql(table: str, columns: list[str], carried: dict[str, list[str]]) -> str:
    """INSERT … SELECT of one staged table into ctgov: ids from `_new`, references repointed to the new ids of
    the rows they name (NULL when that row is not in the export or not inserted)."""
    names: list[str] = []
    exprs: list[str] = []
    joins: list[str] = []
    cols = (["id"] if table in ID_TABLES else []) + [c for c in columns if c != "id"]
    for col in cols:
        target = _TARGET.get((table, col))
        if col == "id":
            expr = "s._new"
        elif target is None:
            expr = f's."{col}"'
        elif target in carried and "id" in carried[target]:
            alias = f"m{len(joins)}"
            joins.append(f'LEFT JOIN "_s_{target}" {alias} ON {alias}.id = s."{col}" '
                         f"AND {alias}.nct_id = s.nct_id")
            expr = f"CASE WHEN {_kept_table(target)} THEN {alias}._new END"
        else:
            expr = "NULL"
        names.append(f'"{col}"')
        exprs.append(expr)
    return (f'INSERT INTO ctgov."{table}" ({", ".join(names)}) SELECT {", ".join(exprs)} FROM "_s_{table}" s '
            f"JOIN _decide d ON d.nct_id = s.nct_id {' '.join(joins)} WHERE {_kept_table(table)}")


def _mostly_new(session: Session) -> bool:
    """Whether the import brings more studies than the database holds (a first load, a full export)."""
    row = session.fetch("SELECT (SELECT count(*) FROM _decide WHERE action = 'new') AS new, "
                        "(SELECT count(*) FROM ctgov.studies) AS held")[0]
    return int(row["new"]) > int(row["held"])


def merge(session: Session, carried: dict[str, list[str]], *, replace: bool,
          progress: Progress | None = None) -> Outcome:
    """Decide per study, then move the staged rows of every carried table (table → the columns the source
    filled) into ctgov and the taken studies' provenance into app.study_sources."""
    cut = cap_text(session, carried)
    session.execute(load_sql("import_decide"), replace)
    session.execute("ANALYZE _decide")
    for table in carried:
        if table != "studies":
            session.execute(f"INSERT INTO _enriched SELECT DISTINCT s.nct_id, '{table}' "
                            f'FROM "_s_{table}" s '
                            f"JOIN _decide d ON d.nct_id = s.nct_id WHERE NOT d.take AND NOT EXISTS "
                            f'(SELECT 1 FROM ctgov."{table}" o WHERE o.nct_id = s.nct_id)')
    rows: dict[str, int] = {}
    bulk_load = _mostly_new(session)
    if bulk_load:  # building an index once after the rows are in is far faster than row by row (trigram GIN)
        session.execute("SET LOCAL maintenance_work_mem = '256MB';\n" + ";\n".join(
            f"DROP INDEX IF EXISTS ctgov.{name}" for name in _INDEX_NAMES.findall(_INDEX_DDL)))
    for table, columns in carried.items():
        if table == "studies":  # one row per study: update in place, so columns the source lacks keep ours
            sets = ", ".join(f'"{c}" = s."{c}"' for c in columns if c != "nct_id")
            status = session.execute(f'UPDATE ctgov.studies o SET {sets} FROM "_s_studies" s '
                                     "JOIN _decide d ON d.nct_id = s.nct_id "
                                     "WHERE d.take AND o.nct_id = s.nct_id")
            updated = int(status.split()[-1])
            insert = _insert_sql(table, columns, carried) + " AND d.action = 'new'"
        else:
            session.execute(f'DELETE FROM ctgov."{table}" o USING _decide d '
                            "WHERE o.nct_id = d.nct_id AND d.take")
            updated, insert = 0, _insert_sql(table, columns, carried)
        rows[table] = updated + int(session.execute(insert).split()[-1])
        if progress is not None:
            progress(f"merged {table}", rows[table])
    if bulk_load:
        session.execute(_INDEX_DDL)
        if progress is not None:
            progress("rebuilt indexes", len(_INDEX_NAMES.findall(_INDEX_DDL)))
    # A source with provenance rows (JSON, CSV) replaces ours; one without (AACT) fills the fields of the
    # tables it carries, so our row lacks only what neither had.
    session.execute("DELETE FROM app.study_sources p USING _decide d WHERE p.nct_id = d.nct_id AND d.take "
                    "AND EXISTS (SELECT 1 FROM _s_sources s WHERE s.nct_id = d.nct_id);\n"
                    "INSERT INTO app.study_sources SELECT s.* FROM _s_sources s "
                    "JOIN _decide d ON d.nct_id = s.nct_id WHERE d.take")
    session.execute("UPDATE app.study_sources p SET lacks = ARRAY(SELECT unnest(p.lacks) EXCEPT "
                    "SELECT unnest($1::text[]) ORDER BY 1) FROM _decide d "
                    "WHERE p.nct_id = d.nct_id AND d.take AND p.lacks && $1::text[] "
                    "AND NOT EXISTS (SELECT 1 FROM _s_sources s WHERE s.nct_id = d.nct_id)",
                    sources.filled_by(carried))
    counts = {r["action"]: int(r["studies"]) for r in session.fetch(load_sql("import_outcome_counts"))}
    listed = tuple({"nct_id": r["nct_id"], "action": r["action"], "reason": r["reason"],
                    "added": list(r["added"])}
                   for r in session.fetch(load_sql("import_outcome"), MAX_LISTED))
    return Outcome(counts, listed, rows, cut)


def describe(outcome: Outcome) -> list[str]:
    """Report lines: the counts, then one line per listed study other than new ones."""
    order = ("new", "replaced", "enriched", "kept")
    lines = [", ".join(f"{outcome.counts[a]:,} {a}" for a in order if outcome.counts.get(a))]
    for s in outcome.studies:
        if s["action"] == "new":
            continue
        added = f"; added {', '.join(s['added'])} (ours had none)" if s["added"] else ""
        lines.append(f"{s['nct_id']}: {s['action']} — {s['reason']}{added}")
    limits = {f"{c.table}.{c.column}": c.max_chars for c in text_caps()}
    lines += [f"{n:,} {field} value{'s' if n != 1 else ''} longer than ClinicalTrials.gov's limit of "
              f"{limits[field]:,} characters, stored cut with a mark" for field, n in outcome.cut.items()]
    shown = len(outcome.studies)
    total = sum(outcome.counts.values())
    if total > shown:
        lines.append(f"… {total - shown:,} more studies not listed")
    return lines
