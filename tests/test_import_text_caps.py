"""Imported record text is cut to ClinicalTrials.gov's own limits, with a mark, and counted in the report
(data/ctgov/text_caps.csv, services/data/loaders/merge.py); the trial page shows a long summary collapsed."""

from __future__ import annotations

import copy
import csv
from pathlib import Path
from typing import Any

import pytest

from services.dashboard.trialview import PREVIEW_CHARS, preview
from services.data.loaders import import_ctgov_json
from services.data.loaders.merge import CAPS, cut_mark, describe, text_caps
from tests.test_import_merge import NCT, _remove, _source_record, _write_jsonl

# Where each capped field sits in an API v2 record.
PLACES = {
    ("brief_summaries", "description"): ("descriptionModule", "briefSummary"),
    ("detailed_descriptions", "description"): ("descriptionModule", "detailedDescription"),
    ("eligibilities", "criteria"): ("eligibilityModule", "eligibilityCriteria"),
    ("studies", "brief_title"): ("identificationModule", "briefTitle"),
    ("studies", "official_title"): ("identificationModule", "officialTitle"),
}

with open(CAPS, encoding="utf-8", newline="") as fh:
    ROWS = list(csv.DictReader(fh))


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r['table']}.{r['column']}")
def test_import_text_cap_row_cuts_a_longer_value_with_a_mark(db: Any, scratch_dir: Path, row: dict[str, str]):
    assert row["source"].startswith("ClinicalTrials.gov")
    limit = int(row["max_chars"])
    study = copy.deepcopy(_source_record())
    module, key = PLACES[(row["table"], row["column"])]
    study["protocolSection"].setdefault(module, {})[key] = "word " * (limit // 5 + 100)
    try:
        report = import_ctgov_json(db, _write_jsonl(scratch_dir / "long.jsonl", study), refresh=False)
        stored = db.fetch_value(f'SELECT "{row["column"]}" FROM ctgov."{row["table"]}" WHERE nct_id = :n',
                                {"n": NCT})
        assert stored == ("word " * (limit // 5 + 100))[:limit] + cut_mark(limit)
        assert report.outcome.cut == {f"{row['table']}.{row['column']}": 1}
        assert any(f"limit of {limit:,} characters" in line for line in describe(report.outcome))
    finally:
        _remove(db)


def test_import_text_caps_leave_the_sample_whole(db: Any) -> None:
    for cap in text_caps():
        longest = db.fetch_value(f'SELECT max(length("{cap.column}")) FROM ctgov."{cap.table}"')
        assert longest is not None and longest <= cap.max_chars, cap


def test_import_text_preview_collapses_only_a_long_summary() -> None:
    assert preview("short summary") == ("short summary", "")
    text = "word " * 1000
    head, whole = preview(text)
    assert whole == text and head.endswith(" …") and len(head) <= PREVIEW_CHARS + 2
