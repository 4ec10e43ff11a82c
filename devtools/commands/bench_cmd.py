"""`python -m services bench …`: the parent of every benchmark command."""

from __future__ import annotations

import argparse
from types import ModuleType
from typing import Any


def bench_modules() -> list[ModuleType]:
    """The benchmark modules; each exposes `register_bench(bench_subparsers)`. Add yours here."""
    from devtools.commands import (
        bench_dashboard_cmd,
        bench_eligibility_cmd,
        bench_import_cmd,
        bench_load_cmd,
        bench_matching_cmd,
        bench_memory_cmd,
        bench_snapshot_cmd,
        bench_start_cmd,
        bench_views_cmd,
    )

    return [bench_eligibility_cmd, bench_matching_cmd, bench_load_cmd, bench_dashboard_cmd, bench_memory_cmd,
            bench_start_cmd, bench_views_cmd, bench_snapshot_cmd, bench_import_cmd]


def register(subparsers: Any) -> None:
    """Add `bench` and let every benchmark module add its own sub-command under it."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "bench", help="run a benchmark", description="Run a benchmark and print its measurements."
    )
    bench_subparsers = parser.add_subparsers(dest="bench_command", required=True, metavar="BENCHMARK")
    for module in bench_modules():
        module.register_bench(bench_subparsers)
