"""Scope of the SQL console's catalog access: information_schema answers only about the trial schema.

The guard (services/sqlguard.py) keeps pg_catalog out and lets information_schema in, because its `columns`
view is how a researcher finds AACT's column names. PostgreSQL filters those views by privilege only, so
without a reader role they describe every schema (the app's sessions table, its constraints, …), and even
with one they list pg_catalog's 130 tables. Here each information_schema view a query reads is replaced by
the same view filtered to the trial schemas, and casts to the reg* types — which turn any number into the
name of a table, function, type or role of any schema (`g::oid::regclass`, `AS x(a regrole)`) — are refused,
as are types named with a schema outside the trial data (`null::app.sessions` lists that table's columns).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pglast
from pglast import ast
from pglast.stream import RawStream

from services.errors import UnsafeQuery

INFO_SCHEMA = "information_schema"

# The views a researcher needs to find tables, columns, keys and views, each with the columns naming the
# schema of what a row describes: every one of them must be a trial schema for the row to be shown.
SCOPED_VIEWS: dict[str, tuple[str, ...]] = {
    "schemata": ("schema_name",),
    "tables": ("table_schema",),
    "columns": ("table_schema",),
    "views": ("table_schema",),
    "view_table_usage": ("view_schema", "table_schema"),
    "view_column_usage": ("view_schema", "table_schema"),
    "table_constraints": ("constraint_schema", "table_schema"),
    "key_column_usage": ("constraint_schema", "table_schema"),
    "constraint_column_usage": ("constraint_schema", "table_schema"),
    "constraint_table_usage": ("constraint_schema", "table_schema"),
    "referential_constraints": ("constraint_schema", "unique_constraint_schema"),
    "check_constraints": ("constraint_schema",),
    "element_types": ("object_schema",),
    "sequences": ("sequence_schema",),
    "routines": ("routine_schema",),
    "parameters": ("specific_schema",),
}

# Types whose input and output functions translate between numbers and catalog names.
REG_TYPES = frozenset({"regclass", "regrole", "regnamespace", "regproc", "regprocedure", "regoper",
                       "regoperator", "regtype", "regconfig", "regdictionary", "regcollation"})


def scope(sql: str, trial_schemas: Iterable[str]) -> str:
    """The query with every information_schema view filtered to `trial_schemas`; UnsafeQuery for reg* casts,
    for types named with a schema other than pg_catalog, information_schema and `trial_schemas`, and for
    information_schema views outside SCOPED_VIEWS. Queries that read no information_schema view come back unchanged."""
    schemas = tuple(sorted(set(trial_schemas)))
    root = pglast.parse_sql(sql)
    found: list[tuple[Any, str, int | None, ast.RangeVar]] = []
    stack: list[Any] = [root]
    while stack:  # iterative: the guard admits trees 1,000 levels deep
        node = stack.pop()
        if isinstance(node, tuple):
            stack.extend(node)
            continue
        if not isinstance(node, ast.Node):
            continue
        if isinstance(node, ast.TypeName):  # a cast, or a column list's type (`AS x(a regclass)`)
            _check_type(node, schemas)
        for name in node:
            value = getattr(node, name)
            if _is_info_view(value):
                found.append((node, name, None, value))
            elif isinstance(value, tuple):
                for position, item in enumerate(value):
                    if _is_info_view(item):
                        found.append((node, name, position, item))
            stack.append(value)
    if not found:
        return sql
    for parent, attribute, index, relation in found:
        replacement = _scoped(relation, schemas)
        if index is None:
            setattr(parent, attribute, replacement)
        else:
            items = list(getattr(parent, attribute))
            items[index] = replacement
            setattr(parent, attribute, tuple(items))
    try:
        return str(RawStream()(root))
    except RecursionError:
        raise UnsafeQuery("The query is too deeply nested to be scoped to the trial schema; simplify it.") from None


def _is_info_view(value: Any) -> bool:
    return isinstance(value, ast.RangeVar) and value.schemaname == INFO_SCHEMA


def _check_type(type_name: ast.TypeName, trial_schemas: tuple[str, ...]) -> None:
    names = [part.sval or "" for part in type_name.names or () if isinstance(part, ast.String)]
    if names and names[-1] in REG_TYPES:
        raise UnsafeQuery(
            f"Casting to {names[-1]} is not allowed because it turns numbers into the names of database "
            "objects and roles outside the trial data; compare names as text instead."
        )
    # Every table has a row type of its name: `null::app.sessions` would show the columns of a table the
    # console cannot read. Built-in types are in pg_catalog, the trial tables' in the trial schemas.
    if len(names) > 1 and names[-2] not in ("pg_catalog", INFO_SCHEMA, *trial_schemas):
        raise UnsafeQuery(
            f"Types from schema {names[-2]} are not allowed: {'.'.join(names)} may be the row type of a table "
            "outside the trial data; use a built-in type or the row type of a ctgov table."
        )


def _scoped(relation: ast.RangeVar, schemas: tuple[str, ...]) -> ast.RangeSubselect:
    view = relation.relname or ""
    columns = SCOPED_VIEWS.get(view)
    if columns is None:
        raise UnsafeQuery(
            f"information_schema.{view} is not available in the console; it answers about the trial schema "
            f"through {', '.join(sorted(SCOPED_VIEWS))}."
        )
    listed = ", ".join("'" + s.replace("'", "''") + "'" for s in schemas)
    where = " AND ".join(f"{column} IN ({listed})" for column in columns)
    template = pglast.parse_sql(f"SELECT * FROM (SELECT * FROM {INFO_SCHEMA}.{view} WHERE {where}) AS x")
    statement: Any = template[0].stmt
    subselect: ast.RangeSubselect = statement.fromClause[0]
    subselect.alias = relation.alias if relation.alias is not None else ast.Alias(aliasname=view)
    return subselect
