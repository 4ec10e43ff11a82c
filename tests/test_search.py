"""Tests for services/dashboard/search.py: matching trials, counts, NCT ids and one trial's details."""

from __future__ import annotations

import math

import pytest

from services.dashboard import search
from services.dashboard.filters import Filters
from services.data import geo
from services.eligibility.parser import parse_criteria
from services.errors import BadInput

KOWA = "NCT05923281"


def _raw(raw_v2: list[dict], nct: str) -> dict:
    return next(s["protocolSection"] for s in raw_v2 if s["protocolSection"]["identificationModule"]["nctId"] == nct)


def test_search_parse_nct_id_accepts_case_and_spaces_and_refuses_the_rest():
    assert search.parse_nct_id(" nct05923281 ") == KOWA
    assert search.parse_nct_id("NCT 05923281") == KOWA
    for bad in ("", "NCT123", "05923281", "NCT059232811", "NCT0592328X", "x" * 500, None):
        with pytest.raises(BadInput, match="NCT followed by 8 digits"):
            search.parse_nct_id(bad)


def test_search_parse_nct_id_reads_digits_of_any_script_as_the_id():
    # Full-width digits (typed with a Japanese keyboard) or Arabic-Indic ones passed as digits, and the id came back
    # in them: the trial was looked up as 'NCT０５９２３２８１' and not found.
    assert search.parse_nct_id("NCT０５９２３２８１") == KOWA
    assert search.parse_nct_id("nct ٠٥٩٢٣٢٨١") == KOWA


def test_search_trial_detail_of_the_kowa_trial_matches_the_registry_record(db, raw_v2):
    d = search.trial_detail(KOWA, db=db)
    raw = _raw(raw_v2, KOWA)
    assert d.nct_id == KOWA
    assert d.study["phase"] == "PHASE3"
    assert d.study["title"] == raw["identificationModule"]["briefTitle"]
    assert d.lead_sponsor == "Kowa Company, Ltd." and d.lead_class == "INDUSTRY"
    assert d.collaborators == ()
    assert len(d.sites) == 15 and d.countries == ("Japan",)
    assert d.conditions == tuple(raw["conditionsModule"]["conditions"])
    assert list(d.arms["title"]) == [a["label"] for a in raw["armsInterventionsModule"]["armGroups"]]
    outcomes = raw["outcomesModule"]
    measures = [o["measure"] for o in outcomes.get("primaryOutcomes", []) + outcomes.get("secondaryOutcomes", [])]
    assert list(d.outcomes["measure"]) == measures
    assert [t.upper() for t in d.outcomes["outcome_type"]] == ["PRIMARY"] + ["SECONDARY"] * 6
    assert d.criteria == parse_criteria(raw["eligibilityModule"]["eligibilityCriteria"])
    assert len(d.criteria.inclusion) > 0 and len(d.criteria.exclusion) > 0
    assert d.url == "https://clinicaltrials.gov/study/NCT05923281"
    assert d.nearest_miles is None and d.sites["miles"].isna().all()


def test_search_trial_detail_sorts_sites_by_distance_from_a_point(db, raw_v2):
    osaka = geo.geocode("Osaka, Japan").place
    d = search.trial_detail(KOWA, osaka.lat, osaka.lon, db=db)
    raw_points = [(loc["geoPoint"]["lat"], loc["geoPoint"]["lon"])
                  for loc in _raw(raw_v2, KOWA)["contactsLocationsModule"]["locations"]]
    expected = sorted(geo.haversine_miles(osaka.lat, osaka.lon, lat, lon) for lat, lon in raw_points)
    assert list(d.sites["miles"]) == pytest.approx(expected, abs=1e-3)
    assert d.nearest_miles == pytest.approx(expected[0], abs=1e-3)


def test_search_trial_detail_unknown_id_is_none_and_malformed_is_bad_input(db):
    assert search.trial_detail("NCT00000000", db=db) is None
    with pytest.raises(BadInput):
        search.trial_detail("NCT-oops", db=db)


def test_search_trial_detail_of_a_csv_study_has_geocoded_sites(db, raw_csv):
    row = next(r for r in raw_csv if r.get("Locations") and r.get("Sponsor"))
    d = search.trial_detail(row["NCT Number"], db=db)
    assert d is not None and d.study["title"] == row["Study Title"]
    assert d.lead_sponsor == row["Sponsor"]
    assert len(d.sites) == len(row["Locations"].split("|"))


def test_search_matching_trials_sorts_and_counts_the_same_set(db):
    f = Filters(condition="diabetes", status=())
    total = search.count_trials(f, db=db)
    rows = search.matching_trials(f, sort="enrollment", descending=False, limit=10_000, db=db)
    assert len(rows) == total > 100
    enrollment = [e for e in rows["enrollment"] if not (e is None or (isinstance(e, float) and math.isnan(e)))]
    assert enrollment == sorted(enrollment)
    page2 = search.matching_trials(f, sort="enrollment", descending=False, limit=25, offset=25, db=db)
    assert list(page2["nct_id"]) == list(rows["nct_id"][25:50])


def test_search_long_pages_read_in_parts_are_the_same_frame(db, monkeypatch):
    f = Filters(status=())
    for sort, descending in (("start_date", True), ("enrollment", False), ("title", True)):
        whole = search.matching_trials(f, sort=sort, descending=descending, limit=search.EXPORT_CAP, db=db)
        monkeypatch.setattr(search, "PART_ROWS", 7)  # every page of 28 rows or more is read in four parts
        parted = search.matching_trials(f, sort=sort, descending=descending, limit=search.EXPORT_CAP, db=db)
        monkeypatch.undo()
        assert len(whole) > 100 and parted.equals(whole)


def test_search_nearest_miles_is_the_closest_site_of_each_trial(db):
    f = Filters(near="Boston, MA", radius=50, status=())
    place = f.place()
    rows = search.matching_trials(f, sort="nearest_miles", descending=False, limit=10_000, db=db)
    assert list(rows["nearest_miles"]) == sorted(rows["nearest_miles"])
    for nct, miles in zip(rows["nct_id"][:20], rows["nearest_miles"][:20], strict=True):
        sites = db.fetch_rows("SELECT latitude::float8 AS lat, longitude::float8 AS lon FROM ctgov.facilities "
                              "WHERE nct_id = :n AND latitude IS NOT NULL", {"n": nct})
        assert miles == pytest.approx(min(geo.haversine_miles(place.lat, place.lon, s["lat"], s["lon"])
                                          for s in sites), abs=1e-6)
