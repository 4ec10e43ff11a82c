"""`python -m services settings`: every setting with its value now (secrets hidden); `--readme` rewrites the
README's configuration tables from the settings table (services/settings.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from services import settings
from services.cli import print_result

README = Path(__file__).resolve().parents[2] / "README.md"


def register(sub: Any) -> None:
    p = sub.add_parser("settings", help="every setting (environment variable) and its value now")
    p.add_argument("--readme", action="store_true", help="rewrite README.md's tables from the settings table")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_settings)


def cmd_settings(args: argparse.Namespace) -> int:
    if args.readme:
        README.write_text(settings.readme_with_tables(README.read_text(encoding="utf-8")), encoding="utf-8")
        print(f"wrote the settings tables into {README.name}")
        return 0
    values = settings.shown_values(settings.current())
    print_result(values, args.json, lambda v: "\n".join(f"{k}={val}" for k, val in v.items()))
    return 0
