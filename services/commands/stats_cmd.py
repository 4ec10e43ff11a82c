"""`python -m services stats --query "condition=…&status=…"`: KPIs, funnel and every facet, as the Explore page shows them."""

from __future__ import annotations

import argparse
from typing import Any
from urllib.parse import parse_qs, urlsplit

from services.dashboard.filters import MAX_TEXT, Filters
from services.errors import BadInput

MAX_QUERY_CHARS = 8_000


def register(sub: Any) -> None:
    """Add the `stats` command."""
    p = sub.add_parser("stats", help="dashboard statistics for a filter (the Explore page's numbers)",
                       description="KPIs, the narrowing funnel and every facet for one filter, given as a share "
                                   "link's query string (or the whole link).")
    p.add_argument("--query", default="", help='e.g. "condition=lung%%20cancer&status=RECRUITING" (default: the '
                                               "default filter, open trials)")
    p.add_argument("--facet", action="append", default=None, metavar="NAME",
                   help="only these facets (repeatable); default: every facet")
    p.add_argument("--engine", choices=("auto", "memory", "sql"), default="auto",
                   help="auto: the database's engine (db info names it); memory or sql to compare the two")
    p.add_argument("--json", action="store_true", help="print JSON: kpis, funnel, facets, errors, notices")
    p.set_defaults(handler=cmd_stats)


def parse_query(text: str) -> tuple[Filters, list[str]]:
    """A query string or a whole share link → Filters and notices for whatever was dropped."""
    text = text.strip()
    if len(text) > MAX_QUERY_CHARS:
        raise BadInput(f"--query is {len(text):,} characters long; a share link's query is far shorter "
                       f"(at most {MAX_QUERY_CHARS:,}).")
    if "?" in text or text.startswith(("http://", "https://")):
        text = urlsplit(text).query if "://" in text else text.split("?", 1)[1]
    params = parse_qs(text, keep_blank_values=True)
    return Filters.from_query(params)


def _text(data: dict[str, Any]) -> str:
    k = data["kpis"]
    lines = [f"filter: {data['query'] or '(default: open trials)'}"]
    lines += [f"note: {n}" for n in data["notices"]]
    if k:
        lines.append(f"matching trials {k['matching_trials']:,} · recruiting {k['recruiting']:,} · sites "
                     f"{k['sites']:,} · countries {k['countries']:,} · planned enrollment {k['planned_enrollment']:,}")
    if data["funnel"]:
        lines.append("funnel: " + " → ".join(f"{s['stage']} {s['count']:,}" for s in data["funnel"]))
    for name, rows in data["facets"].items():
        shown = ", ".join(f"{r['label'][:MAX_TEXT]}{' (' + r['series'] + ')' if r.get('series') else ''} "
                          f"{r['count']:,}" for r in rows[:8])
        more = f" (+{len(rows) - 8} more)" if len(rows) > 8 else ""
        lines.append(f"{name}: {shown or '—'}{more}")
    lines += [f"error in {name}: {msg}" for name, msg in data["errors"].items()]
    return "\n".join(lines)


def cmd_stats(args: argparse.Namespace) -> int:
    """Print the dashboard for --query; exit 1 when a facet failed or timed out (the rest is still printed)."""
    from services.cli import print_result
    from services.dashboard import engine, stats
    from services.data import runtime

    f, notices = parse_query(args.query)
    if args.facet:
        unknown = [n for n in args.facet if n not in stats.FACETS]
        if unknown:
            raise BadInput(f"unknown facet(s) {', '.join(unknown)}; choose from {', '.join(stats.FACETS)}.")
    place = f.place()
    if place is not None:
        notices.append(f"Place: {place.name} ({place.lat:.4f}, {place.lon:.4f}); radius {f.radius:g} {f.unit}.")
    d = stats.dashboard(f, facets=args.facet, engine=engine.by_name(runtime.get_db(), args.engine))
    data = d.as_dict()
    data["notices"] = [*notices, *data["notices"]]
    print_result(data, args.json, _text)
    return 1 if d.errors else 0
