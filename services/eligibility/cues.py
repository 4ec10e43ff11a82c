"""Cue words as data: a CSV file of `cue, roles, source, example, …` rows made into one pattern per role.

A cue is lower-case words separated by spaces; a word ending in * stands for any ending ("consent*": consents,
consenting), and any white space may stand between the words. A new cue is a new row, with its source and an
example line that the tests read (the file's further columns say what the rules make of it).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path


@dataclass(frozen=True)
class CueRow:
    """One cue and the roles it plays, where it comes from, and the example line its test reads."""

    cue: str
    roles: tuple[str, ...]
    source: str
    example: str
    checks: dict[str, str]  # the further columns: what the rules make of the example


def _row(r: dict[str, str]) -> CueRow:
    roles = tuple(x.strip() for x in r.pop("roles").split(";"))
    return CueRow(r.pop("cue").strip().lower(), roles, r.pop("source").strip(), r.pop("example").strip(),
                  {k: (v or "").strip() for k, v in r.items()})


@lru_cache(maxsize=8)
def rows(path: Path, roles: tuple[str, ...]) -> tuple[CueRow, ...]:
    """The file's rows; a row without a cue, source, example or expectation, or with a role not in `roles`,
    is an error."""
    with path.open(encoding="utf-8", newline="") as handle:
        found = tuple(_row(r) for r in csv.DictReader(handle))
    bad = [r.cue for r in found if not (r.cue and r.source and r.example and all(r.checks.values()))
           or not set(r.roles) <= set(roles)]
    if bad:
        raise ValueError(f"{path}: rows without a cue, source, example or expectation, or with a role not in "
                         f"{roles}: {bad}")
    return found


def cue_pattern(cue: str) -> str:
    """The regular expression of one cue (no word boundaries: the caller places them)."""
    return r"\s+".join(re.escape(w[:-1]) + r"\w*" if w.endswith("*") else re.escape(w) for w in cue.split())


def alternatives(path: Path, roles: tuple[str, ...], role: str) -> str:
    """A group matching any cue of `role`, the longest cues first."""
    cues = sorted({r.cue for r in rows(path, roles) if role in r.roles}, key=lambda c: (-len(c), c))
    if not cues:
        raise ValueError(f"{path}: no cue has the role {role!r}")
    return "(?:" + "|".join(cue_pattern(c) for c in cues) + ")"


def bounded(path: Path, roles: tuple[str, ...], role: str, *, end: bool = True) -> str:
    """alternatives() as whole words: no word character just before a cue, nor (with `end`) just after it.
    Unlike \\b this also holds at a cue that starts or ends with punctuation ("e.g.")."""
    return rf"(?<!\w){alternatives(path, roles, role)}" + (r"(?!\w)" if end else "")


@dataclass(frozen=True)
class CueFile:
    """One cue file and the roles its rows may play: what the rules compile their patterns from."""

    path: Path
    roles: tuple[str, ...]

    def rows(self) -> tuple[CueRow, ...]:
        """The file's rows, checked (see rows())."""
        return rows(self.path, self.roles)

    def words(self, role: str, *, end: bool = True) -> str:
        """The whole-word pattern of the role's cues (see bounded())."""
        return bounded(self.path, self.roles, role, end=end)

    def compile(self, role: str, *, end: bool = True) -> re.Pattern[str]:
        """words(), compiled, ignoring case."""
        return re.compile(self.words(role, end=end), re.I)
