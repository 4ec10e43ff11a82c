"""`python -m services bench eligibility`: criterion-level accuracy in note mode (TrialGPT expert labels) or
profile mode (guided forms judged by hand)."""

from __future__ import annotations

import argparse
from typing import Any

from devtools.eligibility_benchmark import DEFAULT_PATH, format_report, run_benchmark
from devtools.profile_benchmark import DEFAULT_DIR, format_profile_report, run_profile_benchmark


def register_bench(bench_subparsers: Any) -> None:
    """Add `eligibility` under `bench`."""
    parser: argparse.ArgumentParser = bench_subparsers.add_parser(
        "eligibility",
        help="score the rule evaluator on TrialGPT criterion labels (note mode) or judged guided forms "
        "(profile)",
        description="Note mode: accuracy with a Wilson 95%% interval, macro-F1, Cohen's kappa and a "
        "confusion matrix for the offline rule evaluator on clinical notes (what a note does not mention is "
        "absent), with the GPT-4 labels in the file and majority-label baselines. Profile mode: guided "
        "mode's judgement of every criterion line of the adjudicated guided forms (silence is unknown) "
        "against the hand judgements, with the wrong confident verdicts against the patient listed.",
    )
    parser.add_argument(
        "--mode",
        choices=("note", "profile"),
        default="note",
        help="note: TrialGPT clinical notes; profile: hand-judged guided forms (default: %(default)s)",
    )
    parser.add_argument(
        "--path",
        default=None,
        help=f"note mode: TrialGPT criterion JSONL (default: {DEFAULT_PATH}); profile mode: the "
        f"folder of judged forms (default: {DEFAULT_DIR})",
    )
    parser.add_argument("--json", action="store_true", help="print the full result as JSON")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Run the benchmark and print it."""
    from services.cli import print_result

    if getattr(args, "mode", "note") == "profile":
        print_result(run_profile_benchmark(args.path or DEFAULT_DIR), args.json, format_profile_report)
    else:
        print_result(run_benchmark(args.path or DEFAULT_PATH), args.json, format_report)
    return 0
