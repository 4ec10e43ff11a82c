"""Command-line interface: everything that is not UI. Subcommands print JSON with --json.

Exit codes: 0 ok, 2 bad input (a message on stderr says what to change), 1 failure.
Each command group lives in services/commands/<name>.py (the developer tools' `bench` and `synth` in
devtools/commands/, run by `python -m devtools`) and exposes `register(subparsers) -> None`; its handlers
return an exit code.
"""

from __future__ import annotations

import argparse
import json
import runpy
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from services import settings
from services.errors import BadInput, TrialLandscapeError

Handler = Callable[[argparse.Namespace], int]


def print_result(data: Any, as_json: bool, text: Callable[[Any], str] | None = None) -> None:
    """Print a command's result as JSON (machine) or as text (person)."""
    if as_json or text is None:
        print(json.dumps(data, indent=2, default=str, ensure_ascii=False))
    else:
        print(text(data))


# The developer tools' commands (benchmarks, synthetic data) live in devtools/ with their own entry point,
# `python -m devtools …`; `python -m services bench|synth …` hands them over by name (runpy), so this package
# never imports devtools.
DEVTOOLS_COMMANDS = ("bench", "synth")


def command_modules() -> list[ModuleType]:
    """The command modules in help order; add yours here (imported on call, because they import this module)."""
    from services.commands import (
        db_cmd,
        import_cmd,
        live_cmd,
        match_cmd,
        settings_cmd,
        sql_cmd,
        stats_cmd,
        watch_cmd,
    )

    return [db_cmd, import_cmd, sql_cmd, stats_cmd, match_cmd, live_cmd, watch_cmd, settings_cmd]


def build_parser(modules: Sequence[ModuleType] | None = None, prog: str = "python -m services",
                 epilog: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every command group of `modules` (default: this package's)."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0], epilog=epilog)
    sub = parser.add_subparsers(dest="command", required=True)
    for module in command_modules() if modules is None else modules:
        module.register(sub)
    return parser


def run(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> int:
    """Parse arguments, check the settings, run the chosen handler, map errors to exit codes."""
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        settings.check()
        return handler(args)
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except TrialLandscapeError as exc:
        hint = f" {exc.hint}" if exc.hint else ""
        print(f"error: {exc}{hint}", file=sys.stderr)
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m services …`; `bench` and `synth` are the developer tools' (`python -m devtools …`)."""
    given = list(sys.argv[1:] if argv is None else argv)
    if given and given[0] in DEVTOOLS_COMMANDS:
        sys.argv = ["python -m devtools", *given]
        try:
            runpy.run_module("devtools", run_name="__main__", alter_sys=True)
        except SystemExit as done:
            return done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        return 0
    return run(build_parser(epilog="Developer tools: python -m devtools bench|synth …"), given)
