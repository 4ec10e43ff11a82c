"""`python -m services bench …`: the parent of every benchmark command."""

from __future__ import annotations

import argparse
import importlib
from typing import Any

# One line per benchmark module; each exposes `register_bench(bench_subparsers)`.
BENCH_MODULES = [
    "services.commands.bench_eligibility_cmd",
    "services.commands.bench_load_cmd",
    "services.commands.bench_dashboard_cmd",
    "services.commands.bench_memory_cmd",
    "services.commands.bench_start_cmd",
]


def register(subparsers: Any) -> None:
    """Add `bench` and let every benchmark module add its own sub-command under it."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "bench", help="run a benchmark", description="Run a benchmark and print its measurements."
    )
    bench_subparsers = parser.add_subparsers(dest="bench_command", required=True, metavar="BENCHMARK")
    for name in BENCH_MODULES:
        importlib.import_module(name).register_bench(bench_subparsers)
