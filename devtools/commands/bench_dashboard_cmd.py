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
    parser.add_argument("--engine", choices=("auto", "memory", "sql"), default="auto",
                        help="auto: the database's engine (the app's path: in-process when the derived tables are "
                             "built, else SQL on the base tables); memory or sql to time that one")
    parser.add_argument("--target", type=float, default=None, help="p50 target in seconds (default: 1.0)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--synthetic", action="store_true",
                       help="registry scale: the generator's database (python -m services synth), and compare "
                            "with the straightforward computation in the same run")
    where.add_argument("--database-url", default=None,
                       help="registry scale on this database (e.g. a full AACT), compared the same way")
    parser.add_argument("--compare", action="store_true",
                        help="also time the straightforward computation on the app's own database")
    parser.add_argument("--naive-runs", type=int, default=None,
                        help="with a comparison: timed runs of the straightforward computation (default: as --runs; "
                             "at registry scale one run takes up to tens of minutes)")
    parser.add_argument("--smoke", action="store_true",
                        help="with a comparison: one run per filter, for checking agreement only (not timing)")
    parser.add_argument("--paths-only", action="store_true",
                        help="with a comparison: time only the paths (Trials table pages under each sort, trial "
                             "page, CSV/JSON export, world map, assistant tools), not the dashboard filters")
    parser.add_argument("--engine-only", action="store_true",
                        help="with --paths-only: time the database's engine alone (no SQL-engine side)")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Run the benchmark and print it; 2 for bad arguments, 1 when over target."""
    from devtools import bench
    from services.cli import print_result
    from services.errors import BadInput

    if args.smoke and not (args.synthetic or args.database_url or args.compare):
        raise BadInput("--smoke goes with --synthetic, --database-url or --compare.")
    if args.runs < 5 and not args.smoke:
        raise BadInput("--runs must be at least 5 (a p50 over fewer runs says little).")
    if args.synthetic or args.database_url or args.compare:
        return _compare(args)
    if args.target is not None and args.target <= 0:
        raise BadInput("--target must be more than 0 seconds.")
    target = args.target if args.target is not None else bench.DASHBOARD_TARGET_S
    result = bench.bench_dashboard(runs=args.runs, engine_name=args.engine, target_s=target)
    print_result(result, args.json, bench.dashboard_table)
    return 0 if result["ok"] else 1


def _compare(args: argparse.Namespace) -> int:
    """Ours against the straightforward computation, with agreement; registry scale when asked."""
    import os

    from devtools import bench_scale, synth
    from services.cli import print_result
    from services.data import runtime

    if args.synthetic or args.database_url:
        db = synth.synthetic_database(args.database_url) if args.synthetic else None
        url = db.url if db is not None else args.database_url
        # Every service in this process (map, search) must read the benchmark database.
        os.environ["DATABASE_URL"] = url
        runtime.reset()
    db = runtime.get_db()
    if not db.fetch_value("SELECT count(*) FROM ctgov.studies"):
        from services.errors import BadInput

        raise BadInput(f"{db.label} has no studies; generate them first: python -m services synth --studies 575000")
    runs = 1 if args.smoke else args.runs
    naive_runs = 1 if args.smoke else (args.naive_runs or runs)
    if naive_runs < 1:
        from services.errors import BadInput

        raise BadInput("--naive-runs must be at least 1.")
    if args.paths_only:
        result = bench_scale.run_paths(db, runs=runs, sql_side=not args.engine_only)
        print_result(result, args.json, bench_scale.table)
        return 0 if result["all_agree"] else 1
    result = bench_scale.run(db, runs=runs, naive_runs=naive_runs)
    print_result(result, args.json, bench_scale.table)
    return 0 if result["all_agree"] else 1
