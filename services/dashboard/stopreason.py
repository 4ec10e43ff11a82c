"""Reasons for stopping grouped into categories (accrual, funding, safety, efficacy, business, COVID-19,
other) by the cue words of data/ctgov/stop_reasons.csv: the reason, lower case, is searched for each cue (a
whole word or phrase) in file order, and the first category with a cue found is the reason's; a reason with
none is "Other"."""

from __future__ import annotations

import csv
import re
from functools import cache
from pathlib import Path

FILE = Path(__file__).resolve().parents[2] / "data" / "ctgov" / "stop_reasons.csv"
OTHER = "Other"


@cache
def _cues() -> tuple[tuple[str, re.Pattern[str]], ...]:
    with open(FILE, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return tuple(
        (r["category"], re.compile(r"(?<!\w)" + re.escape(r["cue"].lower()) + r"(?!\w)")) for r in rows
    )


def categories() -> tuple[str, ...]:
    """Every category in file order, then Other."""
    return (*dict.fromkeys(c for c, _ in _cues()), OTHER)


def category(reason: str) -> str:
    """The category of one reason for stopping."""
    text = " ".join(reason.lower().split())
    return next((c for c, cue in _cues() if cue.search(text)), OTHER)
