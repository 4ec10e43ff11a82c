"""`python -m services bench dashboard`: cold dashboard() timings (p50) for the representative filters."""

from __future__ import annotations

import argparse
from typing import Any


def register_bench(bench_subparsers: Any) -> None:
    """Add `dashboard` under `bench`."""
    parser: argparse.ArgumentParser = bench_subparsers.add_parser(
        "dashboard", help="time the Explore dashboard (KPIs, funnel, every facet) for fixed filters",
        description="Calls stats.dashboard without the result cache for each representative filter and "
                    "reports p50/p90/min/max per filter; exit 1 when a p50 is over the target or a facet fails.",
    )
    parser.add_argument("--runs", type=int, default=5, help="timed calls per filter (default: %(default)s, min 5)")
    parser.add_argument("--mode", choices=("auto", "direct", "derived"), default="auto",
                        help="auto: derived per-study table when built (the app's path), else base tables")
    parser.add_argument("--target", type=float, default=None, help="p50 target in seconds (default: 1.0)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Run the benchmark and print it; 2 for bad arguments, 1 when over target."""
    from services import bench
    from services.cli import print_result
    from services.errors import BadInput

    if args.runs < 5:
        raise BadInput("--runs must be at least 5 (a p50 over fewer runs says little).")
    if args.target is not None and args.target <= 0:
        raise BadInput("--target must be more than 0 seconds.")
    target = args.target if args.target is not None else bench.DASHBOARD_TARGET_S
    result = bench.bench_dashboard(runs=args.runs, mode=args.mode, target_s=target)
    print_result(result, args.json, bench.dashboard_table)
    return 0 if result["ok"] else 1
