"""`python -m services bench memory`: peak memory of a fresh process serving the Explore and Map pages."""

from __future__ import annotations

import argparse
from typing import Any


def register_bench(bench_subparsers: Any) -> None:
    """Add `memory` under `bench`."""
    parser: argparse.ArgumentParser = bench_subparsers.add_parser(
        "memory", help="peak memory of a process serving the dashboard and map",
        description="Starts a fresh Python process that renders the Explore and Map pages (Streamlit AppTest) for "
                    "every benchmark filter and reports its peak resident memory; exit 1 above 1 GB or on a "
                    "page error.",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--synthetic", action="store_true",
                       help="the generator's database (python -m services synth)")
    where.add_argument("--database-url", default=None, help="this database (e.g. a full AACT)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Measure and print; 1 when over the target or a page failed."""
    from devtools import bench_memory, synth
    from services.cli import print_result
    from services.data import runtime

    if args.synthetic:
        url = synth.synthetic_database().url
    elif args.database_url:
        url = args.database_url
    else:
        url = runtime.get_db().url
    result = bench_memory.run(url)
    print_result(result, args.json, bench_memory.table)
    return 0 if result["ok"] else 1
