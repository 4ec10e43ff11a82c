"""Lead sponsor names folded into one per sponsor, for the sponsors chart (issue 38).

The rule: case, accents, punctuation and "&"/"and" folded as site names are (services/data/sitename.fold),
legal forms at the end dropped ("Inc", "LLC", "Ltd", "GmbH", …: LEGAL_FORMS); a parent company only where the
registry's own name states it ("Genzyme, a Sanofi Company", "VelosBio Inc., a subsidiary of Merck & Co.,
Inc."); else a reviewed alias row (data/ctgov/sponsor_aliases.csv, each with its source). A folded group shows
its alias or parent name, else its most common spelling.
"""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from services.data.sitename import fold

FILE = Path(__file__).resolve().parents[2] / "data" / "ctgov" / "sponsor_aliases.csv"
LEGAL_FORMS = (
    "inc",
    "incorporated",
    "llc",
    "ltd",
    "limited",
    "co",
    "corp",
    "corporation",
    "gmbh",
    "ag",
    "sa",
    "s a",
    "plc",
    "bv",
    "nv",
    "spa",
    "s p a",
    "kg",
    "kgaa",
    "pty",
    "srl",
)
# "X, a Y company", "X, a (wholly-owned) subsidiary of Y": the registry names the parent itself.
_PARENT = re.compile(
    r",\s*an?\s+(?:(?:wholly[- ]owned\s+)?subsidiary\s+of\s+(?P<of>.+?)|(?P<co>.+?)\s+company)\s*"
    r"(?:\(.*\))?$",
    re.IGNORECASE,
)
_LEGAL_TAIL = re.compile(r"(?: (?:" + "|".join(re.escape(f) for f in LEGAL_FORMS) + r"))+$")


def key(name: str) -> str:
    """The folded sponsor name: fold, legal forms at the end dropped."""
    return _LEGAL_TAIL.sub("", fold(name)).strip()


@cache
def _aliases() -> dict[str, str]:
    with open(FILE, encoding="utf-8", newline="") as fh:
        return {key(r["name"]): r["sponsor"] for r in csv.DictReader(fh)}


def parent(name: str) -> str | None:
    """The parent company the registry's name states ("Genzyme, a Sanofi Company" → "Sanofi"), else None."""
    m = _PARENT.search(name)
    if not m:
        return None
    found = (m.group("of") or m.group("co") or "").strip(" ,")
    return re.sub(r"\s*\(.*$", "", found).strip(" ,") or None


def sponsor(name: str) -> tuple[str, str | None]:
    """(group key, the name to show when the rule names one: the alias or the stated parent)."""
    stated = parent(name)
    if stated is not None:
        shown = _aliases().get(key(stated), stated)
        return key(shown), shown
    alias = _aliases().get(key(name))
    return (key(alias), alias) if alias else (key(name), None)


def merged(counts: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """(shown name, trials) per sponsor from (name as written, trials) rows, most trials first."""
    total: dict[str, int] = defaultdict(int)
    spellings: dict[str, dict[str, int]] = defaultdict(dict)
    named: dict[str, str] = {}
    for name, n in counts:
        k, shown = sponsor(name)
        total[k] += n
        spellings[k][name] = spellings[k].get(name, 0) + n
        if shown:
            named.setdefault(k, shown)
    rows = [
        (named.get(k) or min(spellings[k].items(), key=lambda kv: (-kv[1], kv[0]))[0], n)
        for k, n in total.items()
    ]
    return sorted(rows, key=lambda r: (-r[1], r[0]))
