"""`sql "SELECT …" [--param name=value …] [--json]`: the SQL console from the command line."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from services import console
from services.cli import print_result
from services.errors import BadInput


def register(sub: Any) -> None:
    """Add the `sql` command."""
    p = sub.add_parser(
        "sql",
        help="run one read-only SELECT over ctgov (same checks, row cap and time limit as the SQL page)",
        description="Run one read-only SELECT over schema ctgov. Refusals go to stderr with exit code 2.",
    )
    p.add_argument("query", help='the SELECT to run, or "-" to read it from standard input')
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="value for :NAME in the query (repeatable); an empty value is NULL")
    p.add_argument("--json", action="store_true", help='print {"columns", "rows", "truncated"} as JSON')
    p.set_defaults(handler=cmd_sql)


def parse_params(pairs: list[str]) -> dict[str, str]:
    """NAME=VALUE strings → {NAME: VALUE}; BadInput for a pair without '=' or a repeated name."""
    params: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name = name.strip().lstrip(":")
        if not sep or not name:
            raise BadInput(f"--param takes NAME=VALUE, not {pair!r}.")
        if name in params:
            raise BadInput(f"--param {name} is given twice; give each parameter once.")
        params[name] = value
    return params


TEXT_CELL_CHARS = 60  # a text table shows at most this much of a cell; --json gives every value whole


def _cell(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    text = " ".join(value.split())
    return text if len(text) <= TEXT_CELL_CHARS else text[:TEXT_CELL_CHARS - 1] + "…"


def _text(result: console.ConsoleResult) -> str:
    frame = result.frame()
    if not len(frame):
        return "(no rows)"
    # One long value (an eligibility text) would otherwise widen every line of the table to its length.
    cut = frame.map(_cell)
    table = cut.to_string(index=False, na_rep="NULL")
    if not cut.equals(frame.map(lambda v: " ".join(v.split()) if isinstance(v, str) else v)):
        table += f"\n(long values cut to {TEXT_CELL_CHARS} characters; --json prints them whole)"
    return table


def cmd_sql(args: argparse.Namespace) -> int:
    query = sys.stdin.read() if args.query == "-" else args.query
    result = console.run_query(query, parse_params(args.param))
    if args.json:
        print_result(result.to_json(), True)
    else:
        print_result(result, False, _text)
    capped = (f"; stopped at the size limit of {result.max_bytes / 1e6:g} MB, more were available"
              if result.truncated_by == "bytes" else
              f"; capped at {result.cap:,} rows, more were available" if result.truncated else "")
    role = f"as {result.role_used}" if result.role_used else "without a reader role"
    print(f"{len(result.rows):,} rows in {result.elapsed_s:.3f} s ({role}; limits {result.cap:,} rows, "
          f"{result.timeout_ms / 1000:g} s){capped}", file=sys.stderr)
    return 0
