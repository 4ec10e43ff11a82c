"""`db init | info | reset`: create the schema and sample, report contents, start afresh."""

from __future__ import annotations

import argparse
from typing import Any

from services import settings
from services.cli import print_result
from services.dashboard.dbinfo import database_info
from services.data import embedded, runtime
from services.errors import BadInput


def register(sub: Any) -> None:
    """Add the `db` command group."""
    db = sub.add_parser("db", help="database: init, info, reset")
    dsub = db.add_subparsers(dest="db_command", required=True)
    p = dsub.add_parser("init", help="create the schema (and load the sample into the embedded database)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_init)
    p = dsub.add_parser("info", help="row counts, sites with coordinates, freshness")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_info)
    p = dsub.add_parser("reset", help="embedded database: delete it and load the sample again")
    p.add_argument("--yes", action="store_true", help="do not ask")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_reset)


def _info_text(info: dict[str, Any]) -> str:
    lines = [f"database: {info['database']} ({info['kind']}, PostgreSQL {info['server_version']}"
             f"{', read-only' if info['read_only'] else ''})",
             f"studies: {info['studies']:,} ({info['full_records']:,} full records, {info['partial_records']:,} "
             f"partial, {info['partial_with_criteria_added']:,} of them with criteria text added)",
             f"sites: {info['sites']:,} ({info['sites_with_coordinates']:,} with coordinates)",
             f"freshness (newest update posted): {info['freshness']}", "tables:"]
    lines += [f"  {name:<26}{rows:>12,}" for name, rows in info["tables"].items()]
    return "\n".join(lines)


def cmd_init(args: argparse.Namespace) -> int:
    db = runtime.get_db()
    if not db.read_only:
        runtime.apply_schema(db)
    print_result(database_info(db), args.json, _info_text)
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    print_result(database_info(), args.json, _info_text)
    return 0


def cmd_reset(args: argparse.Namespace) -> int:
    if settings.current().database_url:
        raise BadInput("db reset only resets the embedded database; unset DATABASE_URL (an external database "
                       "is never wiped by this command).")
    if not args.yes:
        raise BadInput(f"this deletes {embedded.data_dir() / 'pg'}; run again with --yes to confirm.")
    runtime.reset()
    embedded.wipe()
    print_result(database_info(runtime.get_db()), args.json, _info_text)
    return 0
