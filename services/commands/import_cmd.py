"""`import ctgov-json | ctgov-csv | aact | criteria-fill PATH`: load files into the trial database."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from services.cli import print_result
from services.dashboard import stats
from services.data import loaders, runtime
from services.data.loaders import guard
from services.errors import BadInput

_IMPORTERS = {
    "ctgov-json": loaders.import_ctgov_json,
    "ctgov-csv": loaders.import_ctgov_csv,
    "aact": loaders.import_aact,
    "criteria-fill": loaders.import_criteria_fill,
}


def register(sub: Any) -> None:
    """Add the `import` command group."""
    imp = sub.add_parser("import", help="import ClinicalTrials.gov JSON/CSV downloads or an AACT export")
    isub = imp.add_subparsers(dest="import_kind", required=True)
    helps = {"ctgov-json": "API v2 studies: .json array, .jsonl(.gz) or .zip",
             "ctgov-csv": "a ClinicalTrials.gov site CSV download (sites geocoded offline)",
             "aact": "AACT pipe-delimited export: the daily .zip or a folder of <table>.txt",
             "criteria-fill": "criteria text for CSV-derived studies: JSON lines of nct_id, eligibility_criteria, "
                              "source (+ criteria_format, as_of, brief_summary)"}
    for kind, text in helps.items():
        p = isub.add_parser(kind, help=text)
        p.add_argument("path", type=Path)
        p.add_argument("--json", action="store_true")
        if kind not in ("aact", "criteria-fill"):
            p.add_argument("--strict", action="store_true",
                           help="refuse the whole file if any study has a value that fits no column "
                                "(default: skip that study and list it)")
        if kind != "criteria-fill":
            p.add_argument("--replace", action="store_true",
                           help="replace our record of each study with the file's, whatever the dates "
                                "(default: keep the newer and fuller record, table by table, and only add "
                                "what ours lacks)")
        p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
        p.add_argument("--no-start-cache", action="store_true",
                       help="do not write the dashboard's start cache afterwards (the next start builds it)")
        p.set_defaults(handler=cmd_import)


def _text(report: dict[str, Any]) -> str:
    rows = ", ".join(f"{t} {n:,}" for t, n in report["rows"].items() if n)
    notes = "".join(f"\nnote: {n}" for n in report["notes"])
    outcome = report.get("outcome")
    if outcome:
        notes += "\nstudies: " + "\n".join(outcome["lines"])
    if report.get("skipped"):
        notes += f"\n{len(report['skipped'])} studies skipped (listed above); the rest were imported"
    cache = ("" if report.get("start_cache_s") is None
             else f"\nthe dashboard's start cache was written in {report['start_cache_s']} s (the next start maps it)")
    return (f"imported {report['studies']:,} studies from {report['path']} in {report['seconds']} s\nrows: {rows}{notes}"
            f"{cache}")


def _progress(phase: str, count: int) -> None:
    """One stderr line per table copied or merged and per refresh step (reading: every 10,000 records)."""
    if phase == "read" and count % 10_000:
        return
    print(f"{time.strftime('%H:%M:%S')} {phase}: {count:,}", file=sys.stderr, flush=True)


def cmd_import(args: argparse.Namespace) -> int:
    guard.precheck(args.path)  # a zip bomb is refused before the database and its vocabulary are loaded
    db = runtime.get_db()
    if db.read_only:
        raise BadInput(f"{db.label} is read-only; import into the embedded database (unset DATABASE_URL) "
                       f"or a writable PostgreSQL.")
    options: dict[str, Any] = {name: True for name in ("strict", "replace") if getattr(args, name, False)}
    if args.import_kind != "criteria-fill" and not args.quiet:
        options["progress"] = _progress
    report = _IMPORTERS[args.import_kind](db, args.path, **options)
    result = report.as_dict()
    result["start_cache_s"] = None if args.no_start_cache else stats.prepare_after_import(db)
    print_result(result, args.json, _text)
    return 0
