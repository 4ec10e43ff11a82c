"""DatabaseBackend against the real sample database: searches, records, sites, side effects, stats, report seam."""

from __future__ import annotations

import json
from typing import Any

import pytest

from services.assistant import AssistantSession, build_registry
from services.assistant.backend import DatabaseBackend
from services.assistant.handlers import condition_matches
from services.assistant.registry import ToolContext
from services.dashboard import stats
from services.dashboard.filters import Filters, where_sql
from services.data import geo
from services.eligibility.parser import parse_criteria
from services.eligibility.rules import criterion_text_for
from services.report.trial import _site_text
from services.trials import DEFAULT_STATUSES, MAX_TRIALS

LOMPOC = (34.63915, -120.45794)
HOUSTON = (29.76328, -95.36327)


@pytest.fixture(scope="module")
def backend(db: Any) -> DatabaseBackend:
    return DatabaseBackend(db)


def _count(db: Any, f: Filters) -> int:
    """How many studies the shared filter SQL selects (the Explore page's definition), with a generous limit."""
    parts = where_sql(f)
    return int(db.fetch_value(f"SELECT count(*) FROM ctgov.studies s WHERE {parts.sql()}", parts.params,
                              timeout_ms=120_000))


def _raw(raw_v2: list[dict[str, Any]], nct_id: str) -> dict[str, Any]:
    return next(r for r in raw_v2 if r["protocolSection"]["identificationModule"]["nctId"] == nct_id)


@pytest.mark.parametrize(
    ("query", "filters"),
    [
        (Filters.at(*LOMPOC, condition="NSCLC", status=DEFAULT_STATUSES, radius=2500, age=62, sex="MALE"),
         Filters(condition="NSCLC", status=("RECRUITING", "NOT_YET_RECRUITING"), near="Lompoc, CA", radius=2500,
                 age=62, sex="MALE")),
        (Filters.at(*HOUSTON, condition="type 2 diabetes", radius=100, age=55, sex="FEMALE",
                    status=("RECRUITING", "ACTIVE_NOT_RECRUITING")),
         Filters(condition="type 2 diabetes", status=("RECRUITING", "ACTIVE_NOT_RECRUITING"), near="Houston, TX",
                 radius=100, age=55, sex="FEMALE")),
        (Filters(intervention="metformin", phase=("PHASE4",), status=()),
         Filters(intervention="metformin", phase=("PHASE4",), status=())),
    ],
)
def test_assistant_backend_search_counts_match_dashboard_filter(
    backend: DatabaseBackend, db: Any, query: Filters, filters: Filters
) -> None:
    page = backend.search_trials(query)
    assert page["total"] == _count(db, filters)
    assert len(page["trials"]) == min(page["total"], MAX_TRIALS)
    assert page["total"] > 0


def test_assistant_backend_search_orders_by_true_nearest_site(backend: DatabaseBackend) -> None:
    # no radius: any distance, nearest first
    query = Filters.at(*LOMPOC, condition="NSCLC", status=DEFAULT_STATUSES, radius=12_500, age=62, sex="MALE")

    page = backend.search_trials(query, limit=8)

    distances = [t["nearest_site"]["distance_miles"] for t in page["trials"]]  # type: ignore[index]
    assert distances == sorted(distances)
    for trial in page["trials"]:
        sites = backend.get_trial_locations(trial["nct_id"], LOMPOC) or []
        closest = min((s for s in sites if s["distance_miles"] is not None), key=lambda s: s["distance_miles"])  # type: ignore[arg-type,return-value]
        assert trial["nearest_site"] == {
            "facility": closest["facility"], "city": closest["city"], "state": closest["state"],
            "country": closest["country"], "distance_miles": closest["distance_miles"], "status": closest["status"],
        }


def test_assistant_backend_search_whole_result_near_lompoc(backend: DatabaseBackend) -> None:
    query = Filters.at(*LOMPOC, condition="NSCLC", radius=250, age=62, sex="MALE",
                       status=("RECRUITING", "NOT_YET_RECRUITING", "ACTIVE_NOT_RECRUITING"))

    page = backend.search_trials(query)

    shown = [(t["nct_id"], t["status"], t["phases"], t["nearest_site"]["city"],  # type: ignore[index]
              t["nearest_site"]["distance_miles"], t["min_age"], t["sex"]) for t in page["trials"]]  # type: ignore[index]
    # These three (from the older sample file) are found with the same facts; the newer sample adds more.
    for known in [("NCT02623712", "ACTIVE_NOT_RECRUITING", ["NA"], "Pasadena", 131.6, "18 Years", "ALL"),
                  ("NCT05798663", "ACTIVE_NOT_RECRUITING", ["PHASE2"], "Santa Clara", 205.4, "18 Years", "ALL"),
                  ("NCT06956690", "RECRUITING", ["PHASE1", "PHASE2"], "La Jolla", 220.9, "18 Years", "ALL")]:
        assert known in shown or page["total"] > len(shown)
    assert len(shown) == min(page["total"], MAX_TRIALS) and page["total"] >= 3
    assert all(s[1] in query.status and s[4] <= 250 and s[6] in ("ALL", "MALE", None) for s in shown)
    # every trial shown really has a site that close (an independent haversine over its facilities)
    for nct, *_, miles, _age, _sex in shown:
        sites = backend.db.fetch_rows("SELECT latitude::float8 AS lat, longitude::float8 AS lon FROM ctgov.facilities "
                                      "WHERE nct_id = :n AND latitude IS NOT NULL", {"n": nct})
        nearest = min(geo.haversine_miles(LOMPOC[0], LOMPOC[1], r["lat"], r["lon"]) for r in sites)
        assert abs(nearest - miles) < 0.1


def test_assistant_backend_search_without_origin_has_no_distances(backend: DatabaseBackend) -> None:
    page = backend.search_trials(Filters(condition="NSCLC", status=DEFAULT_STATUSES), limit=3)
    assert [t["nearest_site"] for t in page["trials"]] == [None, None, None]
    assert all(t["status"] == "RECRUITING" for t in page["trials"])  # recruiting sorts before not yet recruiting


def test_assistant_backend_details_match_registry_record(backend: DatabaseBackend, raw_v2: list[dict[str, Any]]) -> None:
    raw = _raw(raw_v2, "NCT00106392")["protocolSection"]

    details = backend.get_trial_details("NCT00106392")

    assert details is not None
    arms = raw["armsInterventionsModule"]
    assert details["nct_id"] == "NCT00106392"
    assert details["title"] == raw["identificationModule"]["briefTitle"]
    assert details["official_title"] == raw["identificationModule"].get("officialTitle", "")
    assert details["conditions"] == raw["conditionsModule"]["conditions"]
    assert details["interventions"] == [{"type": i["type"], "name": i["name"]} for i in arms["interventions"]]
    assert details["arms"] == [{"type": g.get("type", ""), "title": g["label"],
                                "description": " ".join(g.get("description", "").split())}
                               for g in arms["armGroups"]]
    assert details["primary_outcomes"] == [" ".join(o["measure"].split())
                                           for o in raw["outcomesModule"]["primaryOutcomes"]]
    assert details["sponsor"] == raw["sponsorCollaboratorsModule"]["leadSponsor"]["name"]
    assert details["summary"] == " ".join(raw["descriptionModule"]["briefSummary"].split())
    assert details["start_date"] == raw["statusModule"]["startDateStruct"]["date"][:7]
    assert details["has_results"] is True


def test_assistant_backend_eligibility_is_split_by_the_parser(
    backend: DatabaseBackend, raw_v2: list[dict[str, Any]]
) -> None:
    module = _raw(raw_v2, "NCT00106392")["protocolSection"]["eligibilityModule"]
    parsed = parse_criteria(module["eligibilityCriteria"])

    info = backend.get_eligibility_criteria("NCT00106392")

    assert info == {
        "nct_id": "NCT00106392",
        "min_age": module.get("minimumAge"),
        "max_age": module.get("maximumAge"),
        "sex": module["sex"],
        "healthy_volunteers": module.get("healthyVolunteers"),
        "inclusion": [criterion_text_for(c) for c in parsed.inclusion],
        "exclusion": [criterion_text_for(c) for c in parsed.exclusion],
        "criteria_text": module["eligibilityCriteria"],
    }
    assert info["inclusion"] and info["exclusion"]


def test_assistant_backend_locations_have_distances(backend: DatabaseBackend, raw_v2: list[dict[str, Any]]) -> None:
    raw = _raw(raw_v2, "NCT00106392")["protocolSection"]["contactsLocationsModule"]["locations"]

    sites = backend.get_trial_locations("NCT00106392", HOUSTON) or []

    assert [(s["facility"], s["city"], s["country"]) for s in sites] == [
        (loc.get("facility", ""), loc.get("city", ""), loc.get("country", "")) for loc in raw
    ]
    for site, loc in zip(sites, raw, strict=True):
        point = loc.get("geoPoint")
        expected = round(geo.haversine_miles(*HOUSTON, point["lat"], point["lon"]), 1) if point else None
        assert site["distance_miles"] == expected
    without = backend.get_trial_locations("NCT00106392", None) or []
    assert {s["distance_miles"] for s in without} == {None}


def test_assistant_backend_adverse_events_sum_result_groups(
    backend: DatabaseBackend, raw_v2: list[dict[str, Any]]
) -> None:
    module = _raw(raw_v2, "NCT00106392")["resultsSection"]["adverseEventsModule"]
    expected: dict[tuple[str, bool], tuple[int, int]] = {}
    for kind, serious in (("seriousEvents", True), ("otherEvents", False)):
        for event in module.get(kind, []):
            affected = sum(s.get("numAffected", 0) for s in event["stats"])
            at_risk = sum(s.get("numAtRisk", 0) for s in event["stats"])
            old = expected.get((event["term"], serious), (0, 0))
            expected[(event["term"], serious)] = (old[0] + affected, old[1] + at_risk)

    report = backend.get_adverse_events("NCT00106392")

    assert report is not None and report["has_results"] is True
    got = {(e["term"], e["serious"]): (e["subjects_affected"], e["subjects_at_risk"]) for e in report["events"]}
    assert got == expected
    affected = [e["subjects_affected"] for e in report["events"]]
    assert affected == sorted(affected, reverse=True)


def test_assistant_backend_trial_without_results(backend: DatabaseBackend) -> None:
    assert backend.get_adverse_events("NCT02623712") == {"nct_id": "NCT02623712", "has_results": False, "events": [],
                                                         "totals": []}


def test_assistant_backend_unknown_trial_is_none(backend: DatabaseBackend) -> None:
    unknown = "NCT99999999"
    assert [backend.get_trial_details(unknown), backend.get_eligibility_criteria(unknown),
            backend.get_trial_locations(unknown, LOMPOC), backend.get_adverse_events(unknown)] == [None] * 4


def test_assistant_backend_geocode_and_stats_use_the_dashboard(backend: DatabaseBackend, db: Any) -> None:
    place = backend.geocode_location("Houston, TX")
    assert place is not None
    assert (place["name"], place["state"], place["country"]) == ("Houston, Texas, United States", "Texas",
                                                                "United States")
    query = Filters.at(place["latitude"], place["longitude"], place["name"], condition="diabetes",
                       status=DEFAULT_STATUSES, radius=100, age=55, sex="FEMALE")

    got = backend.get_dashboard_stats(query)

    board = stats.dashboard(Filters(condition="diabetes", status=("RECRUITING", "NOT_YET_RECRUITING"),
                                    near="Houston, TX", radius=100, age=55, sex="FEMALE"), db=db,
                            facets=["phase", "status"])
    assert got == {
        **{k: board.kpis[k] for k in ("matching_trials", "recruiting", "sites", "countries", "planned_enrollment")},
        "by_phase": {r["value"]: r["count"] for r in board.facets["phase"]},
        "by_status": {r["value"]: r["count"] for r in board.facets["status"]},
    }
    assert got["matching_trials"] == _count(db, board.filters) > 0


def test_assistant_backend_stats_near_any_point(backend: DatabaseBackend, db: Any) -> None:
    # The typed place carries its coordinates: stats near a point nobody geocoded in this process (a restarted
    # server, another worker) count what the dashboard counts there, with no memory of place names.
    point = Filters.at(*HOUSTON, condition="diabetes", status=DEFAULT_STATUSES, radius=100)
    got = backend.get_dashboard_stats(point)
    named = Filters(condition="diabetes", status=DEFAULT_STATUSES, near="Houston, TX", radius=100)
    assert got["matching_trials"] == _count(db, named) > 0
    assert backend.get_dashboard_stats(Filters.at(-45.0, 170.0, condition="diabetes", radius=50))[
        "matching_trials"] == 0


def test_assistant_backend_geocode_unknown_place(backend: DatabaseBackend) -> None:
    assert backend.geocode_location("Qwxzyville, Nowhere") is None


def test_assistant_backend_search_tool_end_to_end(backend: DatabaseBackend) -> None:
    session = AssistantSession()
    ctx = ToolContext(session, backend)
    registry = build_registry()

    outcome = registry.run("search_trials", {"strategy": "wider_radius", "condition": "NSCLC",
                                             "latitude": LOMPOC[0], "longitude": LOMPOC[1], "age": 62,
                                             "sex": "male", "limit": 5}, ctx)

    result = json.loads(outcome.content)
    assert outcome.is_error is False
    # The condition is checked inside the search, before the limit: a full page, every hit about NSCLC.
    assert (result["returned"], len(result["trials"]), result["more_pages"]) == (5, 5, True)
    assert "dropped_not_about_condition" not in result
    for t in result["trials"]:
        terms = [r["t"] for r in backend.db.fetch_rows(
            "SELECT name AS t FROM ctgov.conditions WHERE nct_id = :n UNION ALL SELECT name FROM ctgov.keywords "
            "WHERE nct_id = :n UNION ALL SELECT mesh_term FROM ctgov.browse_conditions WHERE nct_id = :n",
            {"n": t["nct_id"]})]
        assert condition_matches("NSCLC", {"conditions": terms}), t
    assert list(session.candidates) == [t["nct_id"] for t in result["trials"]]
    assert set(session.seen_nct_ids) == set(session.candidates)
    bad = registry.run("get_trial_details", {"nct_id": "NCT99999999"}, ctx)
    assert (bad.is_error, json.loads(bad.content)["error"]) == (
        True, "No trial NCT99999999 in the database. Check the id against your search results.")


@pytest.mark.parametrize("origin", [None, LOMPOC])
def test_assistant_backend_search_past_the_last_page_still_counts_the_matches(
    db: Any, monkeypatch: pytest.MonkeyPatch, origin: tuple[float, float] | None
) -> None:
    # The SQL engine leaves a search without a condition to assistant_search_page.sql; its page 9 of a search with
    # fewer pages said total 0 and matching 0, so the model could tell the patient that nothing matched.
    from services.assistant import backend as backend_module
    from services.dashboard import engine

    monkeypatch.setattr(backend_module, "engine_for", lambda d: engine.SqlEngine(d))
    query = Filters(intervention="metformin", status=())
    if origin is not None:
        query = Filters.at(*origin, intervention="metformin", status=(), radius=12_500)
    first = DatabaseBackend(db).search_trials(query, limit=5)
    assert first["total"] > 0 and first["trials"]
    past = DatabaseBackend(db).search_trials(query, limit=5, offset=first["total"] + 10)
    assert past == {"total": first["total"], "matching": first["matching"], "trials": []}


def test_assistant_backend_eligibility_lines_keep_their_short_section_label(backend: DatabaseBackend) -> None:
    # Guided mode judges these lines with the rules. The rules' own path (rules.criterion_text_for) judges
    # 'Age: 18 and over', an age limit met by a 62-year-old; the bare '18 and over' was 'not enough information'.
    from services.eligibility.labels import Label
    from services.eligibility.patient import PatientProfile
    from services.eligibility.rules import evaluate

    info = backend.get_eligibility_criteria("NCT00057759") or {}
    line = next(c for c in info.get("inclusion") or [] if c.endswith("18 and over"))
    assert evaluate(line, "inclusion", PatientProfile(age=62, sex="male")).label == Label.MET


def test_assistant_backend_details_end_date_is_the_study_completion(backend: DatabaseBackend) -> None:
    """The record's completion_date took the primary completion date first, so the report said 'the study is planned
    to end in' (and 'about 2 years in all') the month its main measurement ends, while the Trials page shows the
    study's completion years later. It is now the study completion date, the primary one only when that is missing."""
    rows = backend.db.fetch_rows(
        "SELECT nct_id, completion_date, primary_completion_date FROM ctgov.studies WHERE completion_date IS NOT NULL "
        "AND date_trunc('month', completion_date) <> date_trunc('month', primary_completion_date) ORDER BY 1 LIMIT 3")
    assert rows
    for row in rows:
        details = backend.get_trial_details(row["nct_id"])
        assert details is not None and details["completion_date"] == f"{row['completion_date']:%Y-%m}"
    only_primary = backend.db.fetch_rows(
        "SELECT nct_id, primary_completion_date FROM ctgov.studies WHERE completion_date IS NULL "
        "AND primary_completion_date IS NOT NULL ORDER BY 1 LIMIT 1")
    for row in only_primary:
        details = backend.get_trial_details(row["nct_id"])
        assert details is not None and details["completion_date"] == f"{row['primary_completion_date']:%Y-%m}"


def test_assistant_backend_nearest_site_is_one_that_may_take_the_patient(backend: DatabaseBackend) -> None:
    """A site whose own status is completed, terminated or withdrawn was the report's "nearest site", with its distance,
    although the trial recruits elsewhere, and the search card named it as if it recruited. Now the report names the
    nearest site whose status recruits or is not given; the card (ordered, like the search, by the nearest site of
    any status) carries the site's own status, so it says plainly that this site is not recruiting."""
    from services import report
    from services.assistant import view_model as vm

    rows = backend.db.fetch_rows(
        "SELECT c.nct_id, c.latitude::float8 AS lat, c.longitude::float8 AS lon, c.name FROM ctgov.facilities c "
        "WHERE c.latitude IS NOT NULL AND upper(c.status) IN ('COMPLETED', 'TERMINATED', 'WITHDRAWN') "
        "AND EXISTS (SELECT 1 FROM ctgov.facilities o WHERE o.nct_id = c.nct_id AND o.latitude IS NOT NULL "
        "AND (o.status IS NULL OR btrim(o.status) = '' OR upper(o.status) = 'RECRUITING') "
        "AND abs(o.latitude - c.latitude) + abs(o.longitude - c.longitude) > 0.5) "
        "AND NOT EXISTS (SELECT 1 FROM ctgov.facilities o WHERE o.nct_id = c.nct_id AND o.latitude IS NOT NULL "
        "AND abs(o.latitude - c.latitude) + abs(o.longitude - c.longitude) <= 0.5 "
        "AND (o.status IS NULL OR btrim(o.status) = '' OR upper(o.status) = 'RECRUITING')) "
        "ORDER BY c.nct_id, c.id LIMIT 3")
    assert rows, "the sample has trials with a closed site beside open ones"
    for r in rows:
        origin = (float(r["lat"]), float(r["lon"]))  # standing at the closed site
        card = backend._page([r["nct_id"]], origin)[0]["nearest_site"]
        assert card is not None and card["distance_miles"] == 0.0, (r["nct_id"], card)
        assert "this site is not recruiting (its own status: " in vm.card_view({"nct_id": r["nct_id"],
                                                                               "nearest_site": card})["nearest"]
        site = report.trial_inputs(backend, {"latitude": origin[0], "longitude": origin[1]},
                                   [{"nct_id": r["nct_id"]}], adverse_events=False)["nearest_sites"][r["nct_id"]]
        assert site.get("status", "") in ("", "RECRUITING"), (r["nct_id"], site)
        assert (site["distance_miles"] or 0.0) > 1.0, (r["nct_id"], site)  # not the closed site the origin is at


def test_nearest_site_prefers_a_site_that_may_enroll_and_says_when_none_may() -> None:
    from services.assistant import view_model as vm
    from services.assistant.handlers import nearest_sites
    from services.trials import Site, nearest_site, site_status_note

    closed: Site = {"facility": "Closed", "status": "COMPLETED", "distance_miles": 3.0}
    far: Site = {"facility": "Open", "status": "", "distance_miles": 40.0}
    unlocated: Site = {"facility": "Nowhere", "status": "RECRUITING", "distance_miles": None}
    assert nearest_site([closed, far, unlocated]) == far
    assert nearest_sites([closed, unlocated, far], 1) == [far]  # guided mode's nearest site (the tool, limit 1)
    assert nearest_site([closed, unlocated]) == closed and nearest_site([unlocated]) is None
    assert site_status_note(closed) == "this site is not recruiting (its own status: completed)"
    assert vm.card_view({"nct_id": "NCT00000001", "nearest_site": dict(closed)})["nearest"] == (
        "Closed — about 3 miles away; this site is not recruiting (its own status: completed)")

    assert _site_text(dict(closed), None) == (
        "Closed", "about 3 miles from you; this site is not recruiting (its own status: completed)")
    assert _site_text(dict(far), None) == ("Open", "about 40 miles from you")
