"""An in-memory TrialBackend for the assistant tests: a few hand-written trials, call log, optional gate."""

from __future__ import annotations

import html
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from services.assistant.backend import reach
from services.assistant.handlers import condition_matches
from services.dashboard.filters import Filters
from services.matching.relevance import TrialRecord
from services.trials import (
    MAX_TRIALS,
    AdverseEvents,
    DashboardStats,
    EligibilityInfo,
    Place,
    ReportOutput,
    ReportRequest,
    SearchPage,
    Site,
    TrialDetails,
    TrialSummary,
)

PLACES: dict[str, Place] = {
    "boston, ma": {"name": "Boston, Massachusetts, US", "latitude": 42.3601, "longitude": -71.0589, "country": "US", "state": "MA", "note": "Boston, MA"},
    "lompoc, california": {"name": "Lompoc, California, US", "latitude": 34.6391, "longitude": -120.4579, "country": "US", "state": "CA", "note": "Lompoc, CA"},
}  # fmt: skip


def _site(facility: str, city: str, state: str, lat: float, lon: float) -> dict[str, Any]:
    return {"facility": facility, "city": city, "state": state, "country": "United States", "status": "RECRUITING", "latitude": lat, "longitude": lon}  # fmt: skip


TRIALS: list[dict[str, Any]] = [
    {
        "nct_id": "NCT00000001",
        "title": "Olaparib After Surgery for BRCA-Positive Breast Cancer",
        "status": "RECRUITING",
        "phases": ["PHASE3"],
        "conditions": ["Breast Cancer"],
        "mesh_terms": ["Breast Neoplasms"],
        "keywords": ["BRCA1", "BRCA2"],
        "interventions": ["Olaparib", "Placebo"],
        "sponsor": "Example Oncology Group",
        "enrollment": 400,
        "start_date": "2024-02",
        "min_age": "18 Years",
        "max_age": None,
        "sex": "ALL",
        "sites": [
            _site("Harbor Cancer Center", "Boston", "MA", 42.35, -71.06),
            _site("Valley Hospital", "Santa Barbara", "CA", 34.42, -119.70),
        ],
        "inclusion": ["Age 18 or older", "Confirmed BRCA1 or BRCA2 mutation", "ECOG 0-1"],
        "exclusion": ["Prior PARP inhibitor"],
        "events": [
            {
                "term": "Nausea",
                "organ_system": "Gastrointestinal",
                "serious": False,
                "subjects_affected": 120,
                "subjects_at_risk": 200,
            },
            {
                "term": "Anaemia",
                "organ_system": "Blood",
                "serious": True,
                "subjects_affected": 12,
                "subjects_at_risk": 200,
            },
        ],  # fmt: skip
    },
    {
        "nct_id": "NCT00000002",
        "title": "Exercise Coaching During Chemotherapy for Breast Cancer",
        "status": "RECRUITING",
        "phases": ["NA"],
        "conditions": ["Breast Cancer", "Fatigue"],
        "mesh_terms": ["Breast Neoplasms"],
        "keywords": [],
        "interventions": ["Exercise coaching"],
        "sponsor": "City University",
        "enrollment": 80,
        "start_date": "2025-01",
        "min_age": "18 Years",
        "max_age": "75 Years",
        "sex": "FEMALE",
        "sites": [_site("City University Clinic", "Cambridge", "MA", 42.37, -71.11)],
        "inclusion": ["Women aged 18-75", "Receiving chemotherapy"],
        "exclusion": ["Heart condition that limits exercise"],
        "events": None,
    },
    {
        "nct_id": "NCT00000003",
        "title": "A Study of Blood Pressure Control in Adults",
        "status": "RECRUITING",
        "phases": ["PHASE4"],
        "conditions": ["Hypertension"],
        "mesh_terms": ["Hypertension"],
        "keywords": ["cancer survivors"],  # names a wider group than "breast cancer": no match for it
        "interventions": ["Lisinopril"],
        "sponsor": "Heart Trials Inc",
        "enrollment": 1000,
        "start_date": "2023-05",
        "min_age": "40 Years",
        "max_age": None,
        "sex": "ALL",
        "sites": [_site("Heart Center", "Worcester", "MA", 42.26, -71.80)],
        "inclusion": ["Blood pressure above 140/90"],
        "exclusion": [],
        "events": None,
    },
]


def haversine_miles(a: tuple[float, float], b: tuple[float, float]) -> float:
    """Great-circle distance in miles."""
    lat1, lon1, lat2, lon2 = map(math.radians, (*a, *b))
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    return 3958.8 * 2 * math.asin(math.sqrt(h))


@dataclass
class MemoryBackend:
    """TrialBackend over a list of trial dicts; records calls; `gate` makes chosen methods wait for each other."""

    trials: list[dict[str, Any]] = field(default_factory=lambda: [dict(t) for t in TRIALS])
    gate: threading.Barrier | None = None
    gated: frozenset[str] = frozenset()
    fail_with: dict[str, BaseException] = field(default_factory=dict)
    log: list[tuple[str, str, str, float]] = field(default_factory=list)
    queries: list[Filters] = field(default_factory=list)
    reports: list[ReportRequest] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _enter(self, method: str, key: str) -> None:
        with self._lock:
            self.log.append(("start", method, key, time.monotonic()))
        if method in self.fail_with:
            raise self.fail_with[method]
        if self.gate is not None and method in self.gated:
            self.gate.wait()

    def _leave(self, method: str, key: str) -> None:
        with self._lock:
            self.log.append(("end", method, key, time.monotonic()))

    def _find(self, nct_id: str) -> dict[str, Any] | None:
        return next((t for t in self.trials if t["nct_id"] == nct_id), None)

    def search_trials(self, query: Filters, *, limit: int = MAX_TRIALS, offset: int = 0) -> SearchPage:
        self._enter("search_trials", query.condition or query.intervention or "")
        self.queries.append(query)
        _, origin, radius = reach(query)
        hits: list[TrialSummary] = []
        for t in self.trials:
            if query.condition and not condition_matches(query.condition, t):  # the database's condition model
                continue
            if query.intervention and not any(
                query.intervention.lower() in i.lower() for i in t["interventions"]
            ):
                continue
            if query.status and t["status"] not in query.status:
                continue
            if query.phase and not set(query.phase) & set(t["phases"]):
                continue
            nearest = None
            if origin is not None:
                dists = sorted(
                    (haversine_miles(origin, (s["latitude"], s["longitude"])), s) for s in t["sites"]
                )
                if radius is not None and dists[0][0] > radius:
                    continue
                d, s = dists[0]
                nearest = {"facility": s["facility"], "city": s["city"], "state": s["state"], "country": s["country"], "distance_miles": round(d, 1)}  # fmt: skip
            summary: TrialSummary = {
                k: t[k]
                for k in (
                    "nct_id",
                    "title",
                    "status",
                    "phases",
                    "conditions",
                    "mesh_terms",
                    "keywords",
                    "interventions",
                    "sponsor",
                    "enrollment",
                    "start_date",
                    "min_age",
                    "max_age",
                    "sex",
                )  # fmt: skip
            }  # type: ignore[assignment]
            summary["site_count"] = len(t["sites"])
            summary["nearest_site"] = nearest  # type: ignore[typeddict-item]
            summary["has_criteria"] = bool(t["inclusion"] or t["exclusion"])
            summary["primary_completion_date"] = t.get("primary_completion_date")
            summary["last_update_date"] = t.get("last_update_date")
            hits.append(summary)
        self._leave("search_trials", query.condition or "")
        return {"total": len(hits), "trials": hits[offset: offset + limit]}

    def get_trial_details(self, nct_id: str) -> TrialDetails | None:
        self._enter("get_trial_details", nct_id)
        t = self._find(nct_id)
        self._leave("get_trial_details", nct_id)
        if t is None:
            return None
        return {
            "nct_id": nct_id,
            "title": t["title"],
            "official_title": t["title"],
            "status": t["status"],
            "phases": t["phases"],
            "study_type": "INTERVENTIONAL",
            "conditions": t["conditions"],
            "interventions": [{"type": "DRUG", "name": n} for n in t["interventions"]],
            "sponsor": t["sponsor"],
            "collaborators": [],
            "enrollment": t["enrollment"],
            "start_date": t["start_date"],
            "completion_date": None,
            "summary": f"This study looks at {t['title'].lower()}.",
            "arms": [],
            "primary_outcomes": ["Disease-free survival"],
            "has_results": t["events"] is not None,
            "primary_completion_date": t.get("primary_completion_date"),
            "last_update_date": t.get("last_update_date"),
        }

    def get_eligibility_criteria(self, nct_id: str) -> EligibilityInfo | None:
        self._enter("get_eligibility_criteria", nct_id)
        t = self._find(nct_id)
        self._leave("get_eligibility_criteria", nct_id)
        if t is None:
            return None
        return {"nct_id": nct_id, "min_age": t["min_age"], "max_age": t["max_age"], "sex": t["sex"], "healthy_volunteers": False, "inclusion": t["inclusion"], "exclusion": t["exclusion"], "criteria_text": ""}  # fmt: skip

    def get_matching_records(self, nct_ids: Sequence[str]) -> dict[str, TrialRecord]:
        return {i: r for i in nct_ids if (r := self._matching_record(i)) is not None}

    def _matching_record(self, nct_id: str) -> TrialRecord | None:
        t = self._find(nct_id)
        if t is None:
            return None
        return TrialRecord(nct_id=nct_id, title=t["title"], conditions=tuple(t["conditions"]),
                           mesh_list=tuple(t["mesh_terms"]), keywords=tuple(t["keywords"]),
                           inclusion=tuple(t["inclusion"]), countries=tuple({s["country"] for s in t["sites"]}),
                           partial=not (t["inclusion"] or t["exclusion"]) or not t["sites"])

    def get_trial_locations(self, nct_id: str, origin: tuple[float, float] | None) -> list[Site] | None:
        self._enter("get_trial_locations", nct_id)
        t = self._find(nct_id)
        self._leave("get_trial_locations", nct_id)
        if t is None:
            return None
        sites: list[Site] = []
        for s in t["sites"]:
            site: Site = dict(s)  # type: ignore[assignment]
            site["distance_miles"] = (
                round(haversine_miles(origin, (s["latitude"], s["longitude"])), 1) if origin else None
            )
            sites.append(site)
        return sites

    def get_adverse_events(self, nct_id: str) -> AdverseEvents | None:
        self._enter("get_adverse_events", nct_id)
        t = self._find(nct_id)
        self._leave("get_adverse_events", nct_id)
        if t is None:
            return None
        return {"nct_id": nct_id, "has_results": t["events"] is not None, "events": list(t["events"] or [])}

    def geocode_location(self, text: str) -> Place | None:
        self._enter("geocode_location", text)
        self._leave("geocode_location", text)
        return PLACES.get(text.strip().lower())

    def get_dashboard_stats(self, query: Filters) -> DashboardStats:
        page = self.search_trials(query)
        trials = [self._find(t["nct_id"]) or {} for t in page["trials"]]
        return {
            "matching_trials": page["total"],
            "recruiting": sum(1 for t in trials if t["status"] == "RECRUITING"),
            "sites": sum(len(t["sites"]) for t in trials),
        }

    def generate_report(self, request: ReportRequest) -> ReportOutput:
        self._enter("generate_report", ",".join(t["nct_id"] for t in request.trials))
        self.reports.append(request)
        rows = "".join(f"<li>{html.escape(t['nct_id'])}: fit {t['fit_score']}</li>" for t in request.trials)
        self._leave("generate_report", "")
        return {"html": f"<html><body><p>{html.escape(request.summary)}</p><ul>{rows}</ul></body></html>"}
