"""The criteria lines of the shipped sample (all three files), read once per test process and filtered by words."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from services.eligibility.parser import parse_criteria

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = (
    "data/sample-v2/full_records.jsonl.gz",
    "data/ctgov_sample.jsonl.gz",
    "data/sample-v2/criteria_fill.jsonl.gz",
)


def _records() -> Iterator[tuple[str, str]]:
    seen: set[str] = set()
    for name in SAMPLES:
        with gzip.open(ROOT / name, "rt", encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                section = record.get("protocolSection", record)
                nct = (section.get("identificationModule") or {}).get("nctId") or record.get("nct_id")
                text = (
                    (section.get("eligibilityModule") or {}).get("eligibilityCriteria")
                    or record.get("criteria")
                    or record.get("eligibility_criteria")
                )
                if nct and text and nct not in seen:
                    seen.add(nct)
                    yield nct, text


@lru_cache(maxsize=8)
def sample_lines(words: str) -> tuple[tuple[str, str, str], ...]:
    """(nct id, kind, line) for each distinct (kind, line) of the sample whose text matches ``words`` (trials are
    filtered by the words before their criteria are split, to keep the tests quick)."""
    pattern = re.compile(words, re.I)
    seen: set[tuple[str, str]] = set()
    out = []
    for nct, text in _records():
        if not pattern.search(text):
            continue
        for c in parse_criteria(text).all:
            if pattern.search(c.full_text) and (c.kind, c.full_text) not in seen:
                seen.add((c.kind, c.full_text))
                out.append((nct, c.kind, c.full_text))
    return tuple(out)
