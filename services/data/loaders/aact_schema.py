"""AACT's 47 study tables (schema `ctgov`, API v2 layout): names, columns in AACT's order and their types.

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


def _tables() -> dict[str, tuple[tuple[str, str], ...]]:
    tables: dict[str, tuple[tuple[str, str], ...]] = {}
    for path in SCHEMA_FILES:
        for raw in pglast.parse_sql(path.read_text(encoding="utf-8")):
            stmt = raw.stmt
            if isinstance(stmt, ast.CreateStmt) and stmt.relation.schemaname == "ctgov":
                tables[stmt.relation.relname] = tuple(
                    (col.colname, _TYPE_NAMES.get(name, name))
                    for col in stmt.tableElts if isinstance(col, ast.ColumnDef)
                    for name in [col.typeName.names[-1].sval]
                )
    return dict(sorted(tables.items()))


TABLES: dict[str, tuple[tuple[str, str], ...]] = _tables()
