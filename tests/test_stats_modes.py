"""The derived per-study table gives exactly the numbers of the direct base-table queries."""

from __future__ import annotations

import pytest

from services import stats
from services.filters import Filters

QUERIES = [
    {},
    {"condition": "lung cancer"},
    {"condition": "NSCLC", "status": "ANY"},
    {"condition": "ALL", "status": "ANY"},
    {"near": "Boston, MA", "radius": "100", "status": "ANY"},
    {"near": "Osaka, Japan", "radius": "300", "unit": "km", "status": "ANY"},
    {"age": "62", "sex": "male"},
    {"age": "0.5", "sex": "female", "status": "ANY"},
    {"status": "RECRUITING", "phase": "PHASE2"},
    {"country": "Japan"},
    {"funder": "INDUSTRY"},
    {"start_from": "2015", "start_to": "2020", "status": "ANY"},
    {"state": "Texas", "healthy": "no", "results": "yes", "status": "ANY"},
    {"sponsor": "pfizer", "enroll_min": "100", "enroll_max": "1000", "status": "ANY"},
    {"intervention": "metformin", "type": "INTERVENTIONAL", "status": "ANY"},
    {"condition": "no such disease anywhere", "status": "ANY"},
]


@pytest.mark.parametrize("query", QUERIES, ids=[str(q) for q in QUERIES])
def test_stats_modes_derived_equals_direct(db, query):
    f, notices = Filters.from_query(query)
    assert notices == []
    direct = stats.dashboard(f, db=db, mode="direct", timeout_ms=60_000)
    derived = stats.dashboard(f, db=db, mode="derived", timeout_ms=60_000)
    assert direct.errors == {} and derived.errors == {}
    assert derived.as_dict() == direct.as_dict()


def test_stats_modes_auto_uses_derived_after_import(db):
    stats.forget_derived_check()
    assert stats.resolve_mode("auto", db) == "memory"
    with stats.forced_mode("direct"):
        assert stats.resolve_mode("auto", db) == "direct"


def test_stats_modes_sequential_baseline_same_numbers(db):
    f, _ = Filters.from_query({"condition": "diabetes"})
    a = stats.dashboard(f, db=db, mode="direct", sequential=True, timeout_ms=60_000)
    b = stats.dashboard(f, db=db, mode="derived", timeout_ms=60_000)
    assert a.as_dict() == b.as_dict()
