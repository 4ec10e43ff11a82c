"""`python -m services bench snapshot`: time the import's after-work with the saved views' snapshot, step by step."""

from __future__ import annotations

import argparse
from typing import Any

from devtools.commands import add_database_choice, chosen_database


def register_bench(bench_subparsers: Any) -> None:
    """Add `snapshot` under `bench`."""
    parser: argparse.ArgumentParser = bench_subparsers.add_parser(
        "snapshot", help="time an import's statistics, derived tables and saved-view snapshot, step by step",
        description="Runs the after-import steps once each (no trial data is changed) and prints their times, the "
                    "versions the snapshot added and the storage kept.")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    add_database_choice(parser, "this database (writable)")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Run it and print the result; 2 when the database is read-only."""
    from devtools import bench_snapshots
    from services.cli import print_result
    from services.errors import BadInput

    db = chosen_database(args)
    if db.read_only:
        raise BadInput(f"{db.label} is read-only: nothing can be refreshed there.")
    print_result(bench_snapshots.bench_snapshot(db), args.json, bench_snapshots.snapshot_text)
    return 0
