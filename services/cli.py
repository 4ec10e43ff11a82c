"""Command-line interface: everything that is not UI. Subcommands print JSON with --json.

Exit codes: 0 ok, 2 bad input (a message on stderr says what to change), 1 failure.
Each command group lives in services/commands/<name>.py (the developer tools' `bench` and `synth` in
devtools/commands/, the one place services/ imports devtools) and exposes `register(subparsers) -> None`;
its handlers return an exit code.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from services.errors import BadInput, TrialLandscapeError

Handler = Callable[[argparse.Namespace], int]


def print_result(data: Any, as_json: bool, text: Callable[[Any], str] | None = None) -> None:
    """Print a command's result as JSON (machine) or as text (person)."""
    if as_json or text is None:
        print(json.dumps(data, indent=2, default=str, ensure_ascii=False))
    else:
        print(text(data))


def command_modules() -> list[ModuleType]:
    """The command modules in help order; add yours here (imported on call, because they import this module)."""
    from devtools.commands import bench_cmd, synth_cmd
    from services.commands import db_cmd, import_cmd, live_cmd, match_cmd, sql_cmd, stats_cmd, watch_cmd

    return [db_cmd, import_cmd, synth_cmd, sql_cmd, bench_cmd, stats_cmd, match_cmd, live_cmd, watch_cmd]


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every registered command group."""
    parser = argparse.ArgumentParser(prog="python -m services", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for module in command_modules():
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, run the chosen handler, map errors to exit codes."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except TrialLandscapeError as exc:
        hint = f" {exc.hint}" if exc.hint else ""
        print(f"error: {exc}{hint}", file=sys.stderr)
        return 1
