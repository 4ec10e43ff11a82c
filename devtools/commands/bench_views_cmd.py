"""`python -m services bench views`: cold p50 of each researcher view for the representative filters."""

from __future__ import annotations

import argparse
from typing import Any

from devtools.commands import add_database_choice, chosen_database


def register_bench(bench_subparsers: Any) -> None:
    """Add `views` under `bench`."""
    parser: argparse.ArgumentParser = bench_subparsers.add_parser(
        "views", help="time the researcher views (comparison, timeline, feasibility, …) for fixed filters",
        description="Calls each view's computation without a result cache for each representative filter and "
                    "reports p50/p90/max; exit 1 when a p50 is over the target or a view fails.",
    )
    parser.add_argument("--runs", type=int, default=5, help="timed calls per view and filter (min 5)")
    parser.add_argument("--views", default=None, help="comma-separated view names (default: all)")
    parser.add_argument("--engine", choices=("auto", "memory", "sql"), default="auto")
    parser.add_argument("--target", type=float, default=None, help="p50 target in seconds (default: 1.0)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    add_database_choice(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Run the benchmark and print it; 2 for bad arguments, 1 when over target or a view fails."""
    from devtools import bench_views
    from services.cli import print_result
    from services.errors import BadInput

    if args.runs < 5:
        raise BadInput("--runs must be at least 5 (a p50 over fewer runs says little).")
    if args.target is not None and args.target <= 0:
        raise BadInput("--target must be more than 0 seconds.")
    names = [n.strip() for n in args.views.split(",") if n.strip()] if args.views else None
    bench_views.check_names(names)  # a typo is refused before the database starts
    result = bench_views.bench_views(chosen_database(args), runs=args.runs, names=names,
                                     engine_name=args.engine,
                                     target_s=args.target or bench_views.VIEWS_TARGET_S)
    print_result(result, args.json, bench_views.views_table)
    return 0 if result["ok"] else 1
