"""The assistant's TrialBackend over our database: searches, trial records, sites, side effects, stats, reports."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from services import report
from services.assistant.arguments import SEX_CODES
from services.dashboard.engine import as_cte, engine_for
from services.dashboard.filters import MAX_RADIUS_MILES, Filters, near_sql
from services.data import geo, provenance, runtime
from services.data.db import Database, load_sql
from services.eligibility.parser import parse_criteria
from services.eligibility.rules import criterion_text_for
from services.errors import TrialLandscapeError
from services.matching.relevance import TrialRecord
from services.matching.store import trial_cases
from services.report.coverage import CopyCoverage
from services.trials import (
    DEFAULT_STATUSES,
    MAX_TRIALS,
    AdverseEvent,
    AdverseEvents,
    AdverseEventTotal,
    DashboardStats,
    EligibilityInfo,
    NearestSite,
    Place,
    ReportOutput,
    ReportRequest,
    SearchPage,
    Site,
    TrialDetails,
    TrialSummary,
    age_limit,
    details_of,
    iso_date,
    phase_codes,
    sex_code,
    status_code,
    year_month,
)

SEARCH_TIMEOUT_MS = 30_000


def reach(query: Filters) -> tuple[Filters, tuple[float, float] | None, float | None]:
    """A search's filters without their place, the point it measures from and its radius in miles (None: any
    distance). The engine orders by distance and applies the radius itself, so the place is taken out of the
    filters it reads."""
    place = query.place()
    if place is None:
        return query, None, None
    radius = query.radius_miles()
    return (replace(query, near=None, origin=None), (place.lat, place.lon),
            None if radius >= MAX_RADIUS_MILES else radius)


def _miles(value: Any) -> float | None:
    return None if value is None else round(float(value), 1)


class DatabaseBackend:
    """TrialBackend over the trial database (default: the process's database from services.data.runtime)."""

    def __init__(self, db: Database | None = None) -> None:
        self._db = db

    @property
    def db(self) -> Database:
        """The database the backend reads (resolved on first use, so building a backend costs nothing)."""
        if self._db is None:
            self._db = runtime.get_db()
        return self._db

    # ------------------------------------------------------------------ search

    def search_trials(self, query: Filters, *, limit: int = MAX_TRIALS, offset: int = 0) -> SearchPage:
        """Trials matching the query through the shared filter SQL: with a condition only those past the
        relevance gate (services/dashboard/relevance.py), in relevance order; nearest site first when a
        place is given."""
        eng = engine_for(self.db)  # the database's engine
        f, origin, radius = reach(query)
        ordered = eng.search_page(f, origin, radius, limit=limit, offset=offset)
        if ordered is not None:  # the engine ordered the matches itself: only the page's rows are read
            ids, total, matching = ordered
            return {"total": total, "matching": matching, "trials": self._page(ids, origin) if ids else []}
        matched, found = eng.matched_select(f)
        params: dict[str, Any] = dict(found)
        if origin is not None and radius is not None:
            place = geo.Place("origin", origin[0], origin[1], "point", "", None, None)
            matched = (f"SELECT q.nct_id FROM ({matched}) q WHERE EXISTS (SELECT 1 FROM ctgov.facilities f "
                       f"WHERE f.nct_id = q.nct_id AND {near_sql(place, radius, params)})")
        params["near_lat"] = origin[0] if origin else None
        params["near_lon"] = origin[1] if origin else None
        params["limit"] = max(1, int(limit))
        params["offset"] = max(0, int(offset))
        cte = as_cte(matched) + "\n"
        page = self.db.fetch_rows(cte + load_sql("assistant_search_page"), params, timeout_ms=SEARCH_TIMEOUT_MS)
        ids = [str(r["nct_id"]) for r in page]
        if not page and params["offset"] > 0:  # past the last page: the counts are every page's, so the first row has them
            page = self.db.fetch_rows(cte + load_sql("assistant_search_page"), {**params, "limit": 1, "offset": 0},
                                      timeout_ms=SEARCH_TIMEOUT_MS)
        total = int(page[0]["total"]) if page else 0
        return {"total": total, "matching": total, "trials": self._page(ids, origin) if ids else []}

    def _page(self, ids: list[str], origin: tuple[float, float] | None) -> list[TrialSummary]:
        """The summaries of one page of NCT ids, in that order, with each one's nearest site from the origin."""
        summaries = {r["nct_id"]: r for r in self.db.fetch_rows(load_sql("assistant_trial_summaries"), {"ids": ids})}
        nearest: dict[str, dict[str, Any]] = {}
        if origin is not None:
            rows = self.db.fetch_rows(load_sql("assistant_nearest_sites"),
                                      {"ids": ids, "near_lat": origin[0], "near_lon": origin[1]})
            nearest = {r["nct_id"]: r for r in rows}
        return [self._summary(summaries[i], nearest.get(i)) for i in ids if i in summaries]

    @staticmethod
    def _summary(row: Mapping[str, Any], near: Mapping[str, Any] | None) -> TrialSummary:
        site: NearestSite | None = None
        if near is not None:
            site = {"facility": near["facility"] or "", "city": near["city"] or "", "state": near["state"] or "",
                    "country": near["country"] or "", "distance_miles": _miles(near["distance_miles"]),
                    "status": status_code(near["status"]) or ""}
        return {
            "nct_id": row["nct_id"],
            "title": row["title"] or "",
            "status": status_code(row["status"]) or "UNKNOWN",
            "phases": phase_codes(row["phase"]),
            "conditions": list(row["conditions"] or []),
            "mesh_terms": list(row["mesh_terms"] or []),
            "keywords": list(row["keywords"] or []),
            "interventions": list(row["interventions"] or []),
            "sponsor": row["sponsor"] or "",
            "enrollment": row["enrollment"],
            "start_date": year_month(row["start_month_year"], row["start_date"]),
            "min_age": age_limit(row["minimum_age"]),
            "max_age": age_limit(row["maximum_age"]),
            "sex": sex_code(row["gender"]),
            "site_count": int(row["site_count"] or 0),
            "nearest_site": site,
            "has_criteria": bool(row["has_criteria"]),
            "primary_completion_date": iso_date(row["primary_completion_date"]),
            "last_update_date": iso_date(row["last_update_posted_date"] or row["last_update_submitted_date"]),
        }

    # ------------------------------------------------------------------ one trial

    def get_trial_details(self, nct_id: str) -> TrialDetails | None:
        """The full record of one trial (services.dashboard.search.trial_detail, as the Trials page shows it), or None."""
        from services.dashboard import search

        detail = search.trial_detail(nct_id, db=self.db)
        return None if detail is None else details_of(detail)

    def get_eligibility_criteria(self, nct_id: str) -> EligibilityInfo | None:
        """Structured limits and the criteria split into numbered inclusion and exclusion lists."""
        rows = self.db.fetch_rows(load_sql("assistant_eligibility"), {"nct_id": nct_id})
        if not rows:
            return None
        r = rows[0]
        text = r["criteria"] or ""
        parsed = parse_criteria(text)
        info: EligibilityInfo = {
            "nct_id": r["nct_id"],
            "min_age": age_limit(r["minimum_age"]),
            "max_age": age_limit(r["maximum_age"]),
            "sex": sex_code(r["gender"]),
            "healthy_volunteers": r["healthy_volunteers"],
            # as the rules' own path judges them: a short section label ("Age: 18 and over") says what a line is about
            "inclusion": [criterion_text_for(c) for c in parsed.inclusion],
            "exclusion": [criterion_text_for(c) for c in parsed.exclusion],
            "criteria_text": text,
        }
        info.update(provenance.tool_fields(provenance.lookup(self.db, str(r["nct_id"]))))  # type: ignore[typeddict-item]
        return info

    def get_matching_records(self, nct_ids: Sequence[str]) -> dict[str, TrialRecord]:
        return {i: case.record for i, case in trial_cases(self.db, nct_ids).items()}

    def get_trial_locations(self, nct_id: str, origin: tuple[float, float] | None) -> list[Site] | None:
        """Every site of one trial with its distance from origin (miles) when an origin is given."""
        rows = self.db.fetch_rows(load_sql("assistant_trial_sites"), {"nct_id": nct_id})
        if not rows:
            return None
        sites: list[Site] = []
        for r in rows:
            if r["facility"] is None and r["city"] is None and r["country"] is None:
                continue
            lat, lon = r["latitude"], r["longitude"]
            distance = None
            if origin is not None and lat is not None and lon is not None:
                distance = round(geo.haversine_miles(origin[0], origin[1], float(lat), float(lon)), 1)
            sites.append({
                "facility": r["facility"] or "", "city": r["city"] or "", "state": r["state"] or "",
                "country": r["country"] or "", "status": status_code(r["status"]) or "",
                "latitude": float(lat) if lat is not None else None,
                "longitude": float(lon) if lon is not None else None,
                "distance_miles": distance,
            })
        return sites

    def get_adverse_events(self, nct_id: str) -> AdverseEvents | None:
        """Adverse events from one trial's posted results (reported_events), summed over result groups."""
        rows = self.db.fetch_rows(load_sql("assistant_adverse_events"), {"nct_id": nct_id})
        if not rows:
            return None
        events: list[AdverseEvent] = [
            {"term": r["term"], "organ_system": r["organ_system"] or "", "serious": bool(r["serious"]),
             "subjects_affected": int(r["subjects_affected"] or 0), "subjects_at_risk": int(r["subjects_at_risk"] or 0)}
            for r in rows if r["term"]
        ]
        totals: list[AdverseEventTotal] = [
            {"event_type": str(t["event_type"]), "subjects_affected": int(t["subjects_affected"] or 0),
             "subjects_at_risk": int(t["subjects_at_risk"] or 0)}
            for t in self.db.fetch_rows(load_sql("assistant_adverse_event_totals"), {"nct_id": nct_id})]
        return {"nct_id": nct_id, "has_results": any(bool(r["has_results"]) for r in rows) or bool(totals),
                "events": events, "totals": totals}

    # ------------------------------------------------------------------ places and stats

    def geocode_location(self, text: str) -> Place | None:
        """Coordinates for a place name or US ZIP from the offline gazetteer; None when not found."""
        result = geo.geocode(text)
        place = result.place
        if place is None:
            return None
        return {"name": place.name, "latitude": round(place.lat, 5), "longitude": round(place.lon, 5),
                "country": place.country, "state": place.state, "note": result.message}

    def get_dashboard_stats(self, query: Filters) -> DashboardStats:
        """The Explore page's KPIs and phase/status counts for the query (services.dashboard.stats.dashboard)."""
        from services.dashboard import stats

        board = stats.dashboard(query, db=self.db, facets=["phase", "status"])
        if "kpis" in board.errors or not board.kpis:
            raise TrialLandscapeError(f"The dashboard numbers could not be computed: {board.errors.get('kpis', 'no result')}.")
        return {
            "matching_trials": board.kpis.get("matching_trials", 0),
            "recruiting": board.kpis.get("recruiting", 0),
            "sites": board.kpis.get("sites", 0),
            "countries": board.kpis.get("countries", 0),
            "planned_enrollment": board.kpis.get("planned_enrollment", 0),
            "by_phase": {str(r["value"]): int(r["count"]) for r in board.facets.get("phase", [])},
            "by_status": {str(r["value"]): int(r["count"]) for r in board.facets.get("status", [])},
        }

    # ------------------------------------------------------------------ report

    def copy_coverage(self, profile: Mapping[str, Any]) -> CopyCoverage:
        """Our copy's size and update dates, and how many open trials for the patient's diagnosis (of their
        age and sex, when known) have no site with coordinates: every search limited by distance misses those.
        """
        age, sex = profile.get("age"), SEX_CODES.get(str(profile.get("sex") or "").lower())
        condition = str(profile.get("diagnosis") or "").strip()
        f = Filters(condition=condition or None, status=DEFAULT_STATUSES, sex=sex,
                    age=float(age) if isinstance(age, int | float) and not isinstance(age, bool) else None)
        matched, params = engine_for(self.db).matched_select(f)
        row = self.db.fetch_rows(as_cte(matched) + "\n" + load_sql("report_copy_coverage"), params,
                                 timeout_ms=SEARCH_TIMEOUT_MS)[0]
        return {"studies": int(row["studies"]), "newest_update": row["newest_update"],
                "oldest_update": row["oldest_update"], "condition": condition,
                "matching": int(row["matching"]) if condition else 0,
                "without_located_site": int(row["without_located_site"]) if condition else 0,
                "for_patient": f.age is not None or f.sex is not None}

    def generate_report(self, request: ReportRequest) -> ReportOutput:
        """Render the report for the selected trials with services.report (details, side effects, nearest
        sites, and what our copy could not show)."""
        return {"html": report.render_report(
            request, **report.trial_inputs(self, request.patient_profile, request.trials),
            coverage=self.copy_coverage(request.patient_profile))}
