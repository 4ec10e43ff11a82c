"""CI check: every commit subject since the rule took effect is at most 72 characters (CONVENTIONS.md)."""

from __future__ import annotations

import subprocess
import sys

# The first commit after which the rule is checked (2026-11-27); earlier subjects are history and stay as written.
SINCE = "84b2f52db74a69df39c7db4a133e98650c3f86a4"
LIMIT = 72


def long_subjects(since: str = SINCE) -> list[str]:
    """The subjects over the limit in since..HEAD (merges included), oldest first."""
    out = subprocess.run(["git", "log", "--reverse", "--format=%h %s", f"{since}..HEAD"], check=True,
                         capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if len(line.split(" ", 1)[1]) > LIMIT]


if __name__ == "__main__":
    known = subprocess.run(["git", "cat-file", "-e", f"{SINCE}^{{commit}}"], capture_output=True).returncode == 0
    if not known:
        print(f"commit subjects not checked: {SINCE[:7]} is not in this clone's history (a shallow clone?)")
        sys.exit(0)
    bad = long_subjects()
    for line in bad:
        print(f"commit subject over {LIMIT} characters: {line}")
    sys.exit(1 if bad else 0)
