"""`synth --studies N --seed S`: AACT-shaped synthetic data in its own database, for benchmarks."""

from __future__ import annotations

import argparse
from typing import Any

from devtools import synth
from services.cli import print_result
from services.dashboard import stats
from services.errors import BadInput


def register(sub: Any) -> None:
    """Add the `synth` command."""
    p = sub.add_parser("synth", help="generate AACT-shaped synthetic studies into a separate database")
    p.add_argument("--studies", type=int, default=575_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--database-url", default=None,
                   help="target database (default: an embedded server under .data/synth, never the sample's)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_synth)


def _text(r: dict[str, Any]) -> str:
    rows = "\n".join(f"  {t:<22}{n:>12,}" for t, n in r["rows"].items())
    cache = "" if r.get("start_cache_s") is None else f"\nthe dashboard's start cache was written in {r['start_cache_s']} s"
    return f"{r['studies']:,} synthetic studies into {r['database']} in {r['seconds']} s\n{rows}{cache}"


def cmd_synth(args: argparse.Namespace) -> int:
    if not 1 <= args.studies <= 5_000_000:
        raise BadInput("--studies must be between 1 and 5,000,000.")
    db = synth.synthetic_database(args.database_url)
    report = synth.run(db, args.studies, args.seed)
    result = report.as_dict()
    result["start_cache_s"] = stats.prepare_after_import(db)
    print_result(result, args.json, _text)
    return 0
