"""Old and new AACT spellings normalise to one value, in Python and in SQL."""

from __future__ import annotations

import pytest

from services.data.normalize import canonical, label, phase_list, sql_phase, sql_status

PAIRS = [
    ("phase", "Phase 1/Phase 2", "PHASE1/PHASE2"),
    ("phase", "N/A", "NA"),
    ("phase", "Not Applicable", "NA"),
    ("phase", "Early Phase 1", "EARLY_PHASE1"),
    ("status", "Active, not recruiting", "ACTIVE_NOT_RECRUITING"),
    ("status", "Unknown status", "UNKNOWN"),
    ("status", "Not yet recruiting", "NOT_YET_RECRUITING"),
    ("study_type", "Observational [Patient Registry]", "OBSERVATIONAL"),
    ("funder_class", "Industry", "INDUSTRY"),
    ("funder_class", "U.S. Fed", "FED"),
    ("sex", "Female", "FEMALE"),
    ("intervention_type", "Dietary Supplement", "DIETARY_SUPPLEMENT"),
]


@pytest.mark.parametrize(("kind", "legacy", "current"), PAIRS)
def test_normalize_both_spellings_same_value(kind, legacy, current):
    assert canonical(kind, legacy) == canonical(kind, current) == current
    assert label(kind, legacy) == label(kind, current)


def test_normalize_labels_are_human():
    assert label("phase", "PHASE1/PHASE2") == "Phase 1/Phase 2"
    assert label("status", "ACTIVE_NOT_RECRUITING") == "Active, not recruiting"
    assert label("funder_class", "INDUSTRY") == "Industry"
    assert phase_list("Phase 2/Phase 3") == ("PHASE2", "PHASE3")
    assert phase_list(None) == ()


def test_normalize_sql_matches_python(db):
    values = ["Phase 1/Phase 2", "PHASE1/PHASE2", "N/A", "Early Phase 1", "PHASE4"]
    statuses = ["Active, not recruiting", "ACTIVE_NOT_RECRUITING", "Unknown status", "Recruiting"]
    rows = db.fetch_rows(f"SELECT v, {sql_phase('v')} AS c FROM unnest(CAST(:v AS text[])) v", {"v": values})
    assert [r["c"] for r in rows] == [canonical("phase", v) for v in values]
    rows = db.fetch_rows(f"SELECT v, {sql_status('v')} AS c FROM unnest(CAST(:v AS text[])) v", {"v": statuses})
    assert [r["c"] for r in rows] == [canonical("status", v) for v in statuses]
