"""`live status NCT… [--json]` and `live search [--condition …] [--age N] [--sex …] [--json]`: ClinicalTrials.gov now.

Both ask the ClinicalTrials.gov API v2 (CTGOV_API_URL) with the same spacing, budget and back-off as the app's
"check the status" button; offline they say so (exit 1).
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from services import live
from services.cli import print_result
from services.data.normalize import STUDY_STATUSES


def register(sub: Any) -> None:
    """Add the `live` command group."""
    p = sub.add_parser("live", help="ask ClinicalTrials.gov now: a trial's current status, or a search",
                       description="Live look-ups on ClinicalTrials.gov (API v2). Nothing is stored.")
    group = p.add_subparsers(dest="live_command", required=True)
    s = group.add_parser("status", help="the current status of one or more trials")
    s.add_argument("nct_ids", nargs="+", metavar="NCT_ID")
    s.add_argument("--json", action="store_true")
    s.set_defaults(handler=cmd_status)
    q = group.add_parser("search", help="one page of studies ClinicalTrials.gov finds now; an age keeps studies "
                                        "that give no age bound")
    q.add_argument("--condition")
    q.add_argument("--age", type=float, help="the patient's age in years")
    q.add_argument("--sex", choices=["female", "male"])
    q.add_argument("--status", action="append", default=[], choices=list(STUDY_STATUSES), help="repeatable")
    q.add_argument("--page-size", type=int, default=20)
    q.add_argument("--json", action="store_true")
    q.set_defaults(handler=cmd_search)


def cmd_status(args: argparse.Namespace) -> int:
    if not live.live_enabled():
        raise live.LiveUnavailable("Live look-ups are switched off (CTGOV_LIVE=off).")
    rows = []
    for nct_id in args.nct_ids:
        found = live.client().status(nct_id)
        rows.append({**dataclasses.asdict(found), "checked_at": found.as_of})
    print_result(rows, args.json, lambda rs: "\n".join(
        f"{r['nct_id']}  {r['overall_status']}  last update {r['last_update_posted'] or '—'}  "
        f"{r['recruiting_sites']}/{r['sites']} sites recruiting  (as of {r['checked_at']})" for r in rs))
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    if not live.live_enabled():
        raise live.LiveUnavailable("Live look-ups are switched off (CTGOV_LIVE=off).")
    found = live.client().search(condition=args.condition, age=args.age,
                                 sex=args.sex.upper() if args.sex else None, statuses=tuple(args.status),
                                 page_size=args.page_size)
    studies = [live.parse_status(s) for s in found.get("studies") or [] if isinstance(s, dict)]
    rows = [{"nct_id": s.nct_id, "overall_status": s.overall_status, "last_update_posted": s.last_update_posted}
            for s in studies]
    result = {"total": found.get("totalCount"), "studies": rows}
    print_result(result, args.json, lambda r: f"{r['total']} studies; this page:\n" + "\n".join(
        f"{s['nct_id']}  {s['overall_status']}" for s in r["studies"]))
    return 0
