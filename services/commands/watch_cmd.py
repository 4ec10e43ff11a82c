"""`watch [--json] [--mark-seen]`: what changed in every saved view since it was last opened (for cron or e-mail)."""

from __future__ import annotations

import argparse
from typing import Any

from services.cli import print_result
from services.dashboard import savedviews
from services.data import runtime


def register(sub: Any) -> None:
    """Add the `watch` command."""
    p = sub.add_parser("watch", help="what changed in every saved view since it was last opened (new trials, "
                                     "status changes, results posted, new sites in the watched countries)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--mark-seen", action="store_true",
                   help="afterwards move every view's baseline to the latest import, as opening it in the app does "
                        "(default: leave the baselines alone)")
    p.add_argument("--limit", type=int, default=savedviews.ITEM_LIMIT,
                   help="trials listed per kind of change and view (the counts are always complete)")
    p.set_defaults(handler=cmd_watch)


def _line(text: object) -> str:
    """A value from the data or a view's name on one printable line (no control characters, terminal escapes)."""
    return " ".join("".join(c if c.isprintable() else " " for c in str(text)).split())


def _text(result: dict[str, Any]) -> str:
    if not result["views"]:
        return "no saved views (save one from the sidebar of any page: Saved views → Save current as…)"
    lines = []
    if not result["data_current"]:
        lines.append(f"note: {result['reason']}")
    for view in result["views"]:
        lines.append(f"\n== {_line(view['name'])} ({view['page']}; {_line('; '.join(view['filters']))})")
        if not view["known"]:
            lines.append(f"   cannot tell what changed: {view['reason']}")
            continue
        lines.append(f"   since the import of {view['since']:%Y-%m-%d %H:%M} UTC: {view['summary']}")
        for change in view["changes"]:
            what = savedviews.KIND_TITLES[change["kind"]]
            detail = " → ".join(x for x in (change["before"], change["after"]) if x)
            where = f" in {_line(change['country'])}" if change["country"] else ""
            lines.append(f"   - {what}{where}: {change['nct_id']} {_line(change['title'])[:90]}"
                         f"{f' ({detail})' if detail else ''}  {change['url']}")
        shown = len(view["changes"])
        if shown < sum(view["counts"].values()):
            lines.append(f"   … {sum(view['counts'].values()) - shown:,} more (raise --limit)")
    if result["marked_seen"]:
        lines.append("\nevery view's baseline now is the latest import")
    return "\n".join(lines).lstrip("\n")


def cmd_watch(args: argparse.Namespace) -> int:
    db = runtime.get_db()
    result = savedviews.watch(db, app_db=runtime.get_app_db(), mark_seen=args.mark_seen, limit=max(0, args.limit))
    print_result(result, args.json, _text)
    return 0
