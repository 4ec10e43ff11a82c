"""AACT's 47 study tables (schema `ctgov`, API v2 layout): names, columns in AACT's order and their types
(with their modifiers: numeric(10,6)).

Read from the CREATE TABLE statements in sql/schema/001_ctgov_tables.sql and 003_ctgov_aact_tables.sql
(transcribed from AACT's db/ctgov_v2.sql and its 2024 migrations, github.com/ctti-clinicaltrials/aact, MIT):
the one source for the tables, the loaders' column lists, value coercion, `db info` and the flat-file import.
"""

from __future__ import annotations

from pathlib import Path

import pglast
from pglast import ast

SCHEMA_FILES = tuple(Path(__file__).resolve().parents[3] / "sql" / "schema" / name
                     for name in ("001_ctgov_tables.sql", "003_ctgov_aact_tables.sql"))
# PostgreSQL's own names for the types the files spell in SQL (a serial column is an integer one).
_TYPE_NAMES = {"int4": "integer", "serial": "integer", "int8": "bigint", "bigserial": "bigint", "bool": "boolean",
               "float8": "double precision"}


def _columns(stmt: ast.CreateStmt) -> tuple[tuple[str, str], ...]:
    columns = []
    for col in stmt.tableElts or ():
        if isinstance(col, ast.ColumnDef) and col.colname and col.typeName and col.typeName.names:
            name = col.typeName.names[-1].sval
            mods = ",".join(str(mod.val.ival) for mod in col.typeName.typmods or ())  # numeric(10,6)
            columns.append((col.colname, _TYPE_NAMES.get(name, name) + (f"({mods})" if mods else "")))
    return tuple(columns)


def _tables() -> dict[str, tuple[tuple[str, str], ...]]:
    tables = {}
    for path in SCHEMA_FILES:
        for raw in pglast.parse_sql(path.read_text(encoding="utf-8")):
            stmt, rel = raw.stmt, getattr(raw.stmt, "relation", None)
            if isinstance(stmt, ast.CreateStmt) and rel is not None and rel.schemaname == "ctgov" and rel.relname:
                tables[rel.relname] = _columns(stmt)
    return dict(sorted(tables.items()))


TABLES: dict[str, tuple[tuple[str, str], ...]] = _tables()
