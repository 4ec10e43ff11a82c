"""`python -m services bench eligibility`: criterion-level accuracy against TrialGPT expert labels."""

from __future__ import annotations

import argparse
from typing import Any

from devtools.eligibility_benchmark import DEFAULT_PATH, format_report, run_benchmark


def register_bench(bench_subparsers: Any) -> None:
    """Add `eligibility` under `bench`."""
    parser: argparse.ArgumentParser = bench_subparsers.add_parser(
        "eligibility",
        help="score the rule evaluator (and GPT-4, majority baselines) on TrialGPT criterion labels",
        description="Accuracy with a Wilson 95%% interval, macro-F1, Cohen's kappa and a confusion matrix "
        "for the offline rule evaluator, the GPT-4 labels in the file and majority-label baselines.",
    )
    parser.add_argument("--path", default=str(DEFAULT_PATH), help="TrialGPT criterion JSONL (default: %(default)s)")
    parser.add_argument("--json", action="store_true", help="print the full result as JSON")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Run the benchmark and print it."""
    from services.cli import print_result

    result = run_benchmark(args.path)
    print_result(result, args.json, format_report)
    return 0
