"""`python -m services bench matching`: trial-level matching benchmark on TREC-format queries and qrels."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from devtools.commands import add_database_choice, chosen_database


def register_bench(bench_subparsers: Any) -> None:
    """Add `matching` under `bench`."""
    from devtools.matching_benchmark import DEFAULT_DIR

    parser: argparse.ArgumentParser = bench_subparsers.add_parser(
        "matching",
        help="judge and rank TREC-judged trials for each patient note; nDCG@10, recalls, baselines",
        description="nDCG@10, relevant and not-relevant recall, excluded accuracy and the confusion table of "
        "the app's matching on judged patient-trial pairs, with random and BM25 (title + conditions) "
        "baselines.",
    )
    parser.add_argument(
        "--queries",
        type=Path,
        default=DEFAULT_DIR / "queries.jsonl",
        help="patient notes, JSONL with _id and text (default: %(default)s)",
    )
    parser.add_argument(
        "--qrels",
        type=Path,
        default=DEFAULT_DIR / "qrels.tsv",
        help="judgements, TSV query-id corpus-id score (default: %(default)s)",
    )
    parser.add_argument(
        "--per-patient", action="store_true", help="include each patient's ranked list in --json"
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    add_database_choice(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Run the benchmark and print it; 2 when an input file is missing."""
    from devtools.matching_benchmark import format_report, run_benchmark
    from services.cli import print_result
    from services.errors import BadInput

    for path in (args.queries, args.qrels):
        if not path.is_file():
            raise BadInput(f"no such file: {path}")
    result = run_benchmark(chosen_database(args), args.queries, args.qrels)
    if not args.per_patient:
        result.pop("per_patient")
    print_result(result, args.json, format_report)
    return 0
