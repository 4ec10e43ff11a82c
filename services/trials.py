"""Trial records and the TrialBackend that supplies them, shared by the assistant and the report, with their formatters.

Two shapes of one trial exist on purpose: `TrialDetail` is the whole record as the database holds it (DataFrames of
sites, arms, outcomes; the Trials page shows it), `TrialDetails` is the bounded, JSON-ready part of it that the
assistant's tools and the report read (`details_of` makes one from the other). Everything here is plain Python.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any, NotRequired, Protocol, TypedDict

from services.data import normalize, provenance
from services.inert import text

if TYPE_CHECKING:
    import pandas as pd

    from services.dashboard.filters import Filters
    from services.eligibility.parser import ParsedCriteria
    from services.matching.relevance import TrialRecord

NCT_RE = re.compile(r"NCT\d{8}")
MAX_TRIALS = 15  # trials one assistant search returns at most
DEFAULT_STATUSES: tuple[str, ...] = ("RECRUITING", "NOT_YET_RECRUITING")  # what the assistant searches unless told
# What tool results, cards and the report say when our copy of a record has no eligibility criteria text.
CRITERIA_MISSING = "missing from this copy"


def ctgov_url(nct_id: str) -> str:
    """The trial's page on ClinicalTrials.gov."""
    return f"https://clinicaltrials.gov/study/{nct_id}"


# --------------------------------------------------------------------------------------------
# Formatters. Record values: a database value in the canonical form the JSON records carry. In words: a canonical
# value as a patient reads it.


def year_month(month_year: Any, day: Any = None) -> str | None:
    """A start or completion date as YYYY-MM (or the registry's own text when it is not ISO)."""
    if isinstance(month_year, str) and month_year.strip():
        stripped = month_year.strip()
        return stripped[:7] if stripped[:4].isdigit() else stripped
    if isinstance(day, date):
        return day.strftime("%Y-%m")
    return None


def iso_date(value: Any) -> str | None:
    """A date as YYYY-MM-DD text (None when missing)."""
    return value.isoformat() if isinstance(value, date) else None


def phase_codes(raw: Any) -> list[str]:
    """Any spelling of a trial's phase ('Phase 1/Phase 2') as its codes (['PHASE1', 'PHASE2'])."""
    return list(normalize.phase_list(raw)) if raw else []


def status_code(raw: Any) -> str | None:
    """Any spelling of a status as its code (None when missing)."""
    return normalize.canonical("status", raw) if raw else None


def sex_code(raw: Any) -> str | None:
    """Any spelling of the sex limit as its code (None when missing)."""
    return normalize.canonical("sex", raw) if raw else None


def age_limit(raw: Any) -> str | None:
    """An age limit as the registry writes it ('18 Years'); None when there is none."""
    if raw is None or str(raw).strip().upper() in ("", "N/A", "NA"):
        return None
    return str(raw).strip()


def miles_words(miles: float) -> str:
    """A site's distance as a patient reads it: 'less than a mile', 'about 1 mile', 'about 1,455 miles'."""
    if miles < 1:
        return "less than a mile"
    return f"about {miles:,.0f} mile{'s' if round(miles) != 1 else ''}"


def phase_words(value: Any) -> str:
    """Phases (a list of codes, or one 'PHASE1/PHASE2' text) as 'Phase 1 / Phase 2'."""
    if not value:
        return ""
    parts = value if isinstance(value, list | tuple) else re.split(r"[/,]", str(value))
    labels = [normalize.label("phase", str(p).strip()) for p in parts if str(p).strip()]
    return " / ".join(dict.fromkeys(labels))


def status_words(value: Any) -> str:
    """A status in words ('ACTIVE_NOT_RECRUITING' → 'Active, not recruiting'); '' when missing."""
    return normalize.label("status", str(value)) if value else ""


# A site's own status that says it takes (or will take) participants; a site without a status of its own (most
# of them) goes by the trial's. Any other site status (completed, withdrawn, terminated, …) says it does not.
SITE_ENROLLING = ("RECRUITING", "NOT_YET_RECRUITING", "ENROLLING_BY_INVITATION", "AVAILABLE", "UNKNOWN")


def site_may_enroll(status: Any) -> bool:
    """Whether a site's own status recruits or is not given (the trial's status then speaks for it)."""
    code = status_code(str(status).strip()) if status is not None and str(status).strip() else None
    return code is None or code in SITE_ENROLLING


def site_status_note(site: Mapping[str, Any]) -> str:
    """'' for a site that may take participants, else a plain clause saying it is not recruiting and why."""
    status = site.get("status")
    if site_may_enroll(status):
        return ""
    return f"this site is not recruiting (its own status: {status_words(status_code(status)).lower()})"


def nearest_site(sites: Iterable[Site]) -> Site | None:
    """The closest located site that may take participants (site_may_enroll); when none may, the closest located
    site (its status says it does not: site_status_note); None without a located site."""
    located = [s for s in sites if isinstance(s.get("distance_miles"), int | float)]
    enrolling = [s for s in located if site_may_enroll(s.get("status"))]
    return min(enrolling or located, key=lambda s: float(s.get("distance_miles") or 0.0), default=None)


# --------------------------------------------------------------------------------------------
# The whole record (the Trials page) and its JSON-ready part (the assistant's tools and the report).


@dataclass(frozen=True)
class TrialDetail:
    """Everything the detail view shows about one trial (plain values and DataFrames; picklable)."""

    nct_id: str
    study: dict[str, Any]
    conditions: tuple[str, ...]
    keywords: tuple[str, ...]
    arms: pd.DataFrame
    interventions: pd.DataFrame
    outcomes: pd.DataFrame
    sites: pd.DataFrame  # with miles (None without a place), nearest first when a place is given
    lead_sponsor: str | None
    lead_class: str | None
    collaborators: tuple[str, ...]
    criteria: ParsedCriteria
    provenance: provenance.Provenance | None = None  # which fields our copy lacks (None: a full record)
    contacts: pd.DataFrame | None = None  # central then site contacts (kind, role, name, email, phone, facility, city)

    @property
    def url(self) -> str:
        """The trial's page on ClinicalTrials.gov."""
        return ctgov_url(self.nct_id)

    @property
    def countries(self) -> tuple[str, ...]:
        """Countries of the sites, most sites first."""
        if self.sites.empty:
            return ()
        counts = self.sites["country"].dropna().value_counts()
        return tuple(sorted(counts.index, key=lambda c: (-int(counts[c]), str(c))))

    @property
    def nearest_miles(self) -> float | None:
        """Distance to the nearest located site from the place given (None without a place or coordinates)."""
        if self.sites.empty or self.sites["miles"].isna().all():
            return None
        return float(self.sites["miles"].min())


class TrialDetails(TypedDict, total=False):
    """The JSON-ready record of one trial that the tools and the report read (made by details_of)."""

    nct_id: str
    title: str
    official_title: str
    status: str
    phases: list[str]
    study_type: str
    conditions: list[str]
    interventions: list[dict[str, str]]
    sponsor: str
    collaborators: list[str]
    enrollment: int | None
    enrollment_type: str  # ACTUAL (how many took part), ESTIMATED/ANTICIPATED (a plan), "" when not given
    start_date: str | None
    completion_date: str | None
    summary: str
    arms: list[dict[str, str]]
    primary_outcomes: list[str]
    has_results: bool
    primary_completion_date: str | None
    last_update_date: str | None
    not_in_this_copy: list[str]  # fields our copy lacks because its source did not carry them (services.data.provenance)
    copy_note: str
    criteria_source: str
    contacts: list[dict[str, str]]  # the registry's central and site contacts (none in the shipped sample)


def details_of(detail: TrialDetail) -> TrialDetails:
    """The JSON-ready part of a trial's whole record."""
    study = detail.study
    enrollment = study.get("enrollment")
    details: TrialDetails = {
        "nct_id": detail.nct_id,
        "title": study.get("title") or "",
        "official_title": study.get("official_title") or "",
        "status": status_code(study.get("status")) or "UNKNOWN",
        "phases": phase_codes(study.get("phase")),
        "study_type": normalize.canonical("study_type", study["study_type"]) or "" if study.get("study_type") else "",
        "conditions": list(detail.conditions),
        "interventions": [{"type": text(r["intervention_type"]), "name": text(r["name"])}
                          for r in detail.interventions.to_dict("records")],
        "sponsor": detail.lead_sponsor or "",
        "collaborators": list(detail.collaborators),
        "enrollment": int(enrollment) if enrollment is not None else None,
        "enrollment_type": normalize.canonical("enrollment_type", text(study.get("enrollment_type"))) or "",
        "start_date": year_month(None, study.get("start_date")),
        "completion_date": year_month(None, study.get("completion_date") or study.get("primary_completion_date")),
        "summary": text(study.get("brief_summary")),
        "arms": [{"type": text(r["group_type"]), "title": text(r["title"]), "description": text(r["description"])}
                 for r in detail.arms.to_dict("records")],
        "primary_outcomes": [text(r["measure"]) for r in detail.outcomes.to_dict("records")
                             if str(r["outcome_type"] or "").upper() == "PRIMARY" and text(r["measure"])],
        "has_results": bool(study.get("has_results")),
        "primary_completion_date": iso_date(study.get("primary_completion_date")),
        "last_update_date": iso_date(study.get("last_update_posted_date") or study.get("last_update_submitted_date")),
    }
    details.update(provenance.tool_fields(detail.provenance))  # type: ignore[typeddict-item]
    if detail.contacts is not None and len(detail.contacts):
        details["contacts"] = [{k: text(v) for k, v in r.items() if text(v)} for r in detail.contacts.to_dict("records")]
    return details


# --------------------------------------------------------------------------------------------
# What a TrialBackend is asked and answers.


class NearestSite(TypedDict, total=False):
    """The closest site of a trial to the patient."""

    facility: str
    city: str
    state: str
    country: str
    distance_miles: float | None
    status: str  # the site's own status code; "" when not given (a closed one is named only when no other is)


class TrialSummary(TypedDict, total=False):
    """One trial in a search result; mesh_terms and keywords feed the condition check and are not shown to the
    model."""

    nct_id: str
    title: str
    status: str
    phases: list[str]
    conditions: list[str]
    mesh_terms: list[str]
    keywords: list[str]
    interventions: list[str]
    sponsor: str
    enrollment: int | None
    start_date: str | None
    min_age: str | None
    max_age: str | None
    sex: str | None
    site_count: int
    nearest_site: NearestSite | None
    has_criteria: bool
    primary_completion_date: str | None
    last_update_date: str | None


class SearchPage(TypedDict):
    """A search answer: how many trials its pages reach, how many match, and the first `limit` trials."""

    total: int  # the trials the pages reach: with a condition, those past the relevance gate
    trials: list[TrialSummary]
    matching: NotRequired[int]  # every trial the filters match (the count every page shows), when not `total`


class Site(TypedDict, total=False):
    """One trial site; distance_miles is set when an origin was given."""

    facility: str
    city: str
    state: str
    country: str
    status: str
    latitude: float | None
    longitude: float | None
    distance_miles: float | None


class EligibilityInfo(TypedDict, total=False):
    """A trial's eligibility: structured limits plus criteria split into inclusion/exclusion."""

    nct_id: str
    min_age: str | None
    max_age: str | None
    sex: str | None
    healthy_volunteers: bool | None
    inclusion: list[str]
    exclusion: list[str]
    criteria_text: str
    not_in_this_copy: list[str]
    copy_note: str
    criteria_source: str


class AdverseEvent(TypedDict, total=False):
    """One adverse event term from a trial's posted results."""

    term: str
    organ_system: str
    serious: bool
    subjects_affected: int
    subjects_at_risk: int


class AdverseEventTotal(TypedDict):
    """People with any serious or other adverse event, or who died, over all of a trial's groups."""

    event_type: str  # 'serious', 'other' or 'deaths'
    subjects_affected: int
    subjects_at_risk: int


class AdverseEvents(TypedDict):
    """Adverse events reported in a trial's results (empty when none were posted)."""

    nct_id: str
    has_results: bool
    events: list[AdverseEvent]
    totals: NotRequired[list[AdverseEventTotal]]  # from reported_event_totals, when the database has them


class Place(TypedDict, total=False):
    """A geocoded place; note says which of several candidates was chosen."""

    name: str
    latitude: float
    longitude: float
    country: str
    state: str | None
    note: str


class DashboardStats(TypedDict, total=False):
    """Headline numbers the Explore page shows for a filter."""

    matching_trials: int
    recruiting: int
    sites: int
    countries: int
    planned_enrollment: int
    by_phase: dict[str, int]
    by_status: dict[str, int]


@dataclass(frozen=True)
class ReportRequest:
    """Everything a report needs; `trials` are the saved matches of the selected trials, in order."""

    session_id: str
    patient_profile: Mapping[str, Any]
    intake_answers: Mapping[str, Any]
    trials: tuple[Mapping[str, Any], ...]
    summary: str
    questions_for_doctor: tuple[str, ...]
    glossary: tuple[Mapping[str, str], ...]
    question_groups: tuple[tuple[str, tuple[str, ...]], ...] = ()
    search_facts: Mapping[str, Any] = field(default_factory=dict)
    # Questions by who can answer them and the reviewer's points per trial (services.assistant.careteam's
    # CareTeam.as_report()); empty in requests made before it existed, which show question_groups instead.
    care_team: Mapping[str, Any] = field(default_factory=dict)


class ReportOutput(TypedDict):
    """The rendered report."""

    html: str


class TrialBackend(Protocol):
    """Data access for the assistant's data tools; return None for an unknown NCT id."""

    def search_trials(self, query: Filters, *, limit: int = MAX_TRIALS, offset: int = 0) -> SearchPage:
        """One page of the trials the filters match, nearest site first when they give a place (query.origin);
        a radius of MAX_RADIUS_MILES means any distance (trials with no located site included)."""

    def get_trial_details(self, nct_id: str) -> TrialDetails | None:
        """The full record of one trial."""

    def get_eligibility_criteria(self, nct_id: str) -> EligibilityInfo | None:
        """Eligibility limits and criteria of one trial."""

    def get_matching_records(self, nct_ids: Sequence[str]) -> dict[str, TrialRecord]:
        """What trial relevance reads (services.matching.relevance) for the given trials that exist, by NCT
        id: title, condition names, MeSH rows by type, keywords, inclusion criteria, countries, and whether
        the record is partial."""

    def get_trial_locations(self, nct_id: str, origin: tuple[float, float] | None) -> list[Site] | None:
        """All sites of one trial, with distances from origin (lat, lon) when given."""

    def get_adverse_events(self, nct_id: str) -> AdverseEvents | None:
        """Adverse events from one trial's posted results."""

    def geocode_location(self, text: str) -> Place | None:
        """Coordinates for a place name or ZIP code, offline; None when unknown."""

    def get_dashboard_stats(self, query: Filters) -> DashboardStats:
        """The Explore page's headline numbers for the query."""

    def generate_report(self, request: ReportRequest) -> ReportOutput:
        """Render the patient's report for the selected trials."""


# --------------------------------------------------------------------------------------------
# What the assistant's searches did (ReportRequest.search_facts), in words for the report and the guided chat.

STRATEGY_WORDS = {
    "exact": "your condition near you", "broader": "a broader name for your condition", "intervention":
    "the treatment you asked about", "wider_radius": "a wider distance", "phase": "the trial phases you prefer",
    "other": "another search",
}


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 trial', '2 trials', '1,200 searches' (the plural spelled out when it is not word + 's')."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"


def within_words(radius: Any) -> str:
    """A search's reach in whole miles ('within 62 miles', 'within 1 mile'; a radius given in km converts to
    62.1371), or 'at any distance'."""
    return f"within {plural(round(radius), 'mile')}" if isinstance(radius, int | float) else "at any distance"


def describe_searches(facts: Mapping[str, Any]) -> list[str]:
    """One sentence per search that ran: what it looked for, how far, and how many trials it returned."""
    lines = []
    for entry in facts.get("searches") or []:
        what = entry.get("condition") or ""
        if entry.get("intervention"):
            what = f"{what} + {entry['intervention']}" if what else str(entry["intervention"])
        where = within_words(entry.get("radius_miles"))
        phases = f", {phase_words(entry['phases'])}" if entry.get("phases") else ""
        lines.append(f"{STRATEGY_WORDS.get(str(entry.get('strategy')), str(entry.get('strategy')))} (“{what}”, {where}"
                     f"{phases}): {plural(int(entry.get('returned') or 0), 'trial')}, "
                     f"{int(entry.get('new') or 0):,} new")
    return lines


def search_sentence(facts: Mapping[str, Any], *, detailed: bool = True) -> str:
    """A truthful summary of the search: radius, the searches run (with each one's counts when detailed), criteria
    text coverage."""
    radius = facts.get("radius_miles")
    place = facts.get("place") or "your place"
    limit = (f"You said you can travel up to {plural(round(radius), 'mile')} from {place}." if isinstance(radius, int | float)
             else f"You set no travel limit from {place}.")
    searches = facts.get("searches") or []
    found = int(facts.get("found") or 0)
    missing = int(facts.get("without_criteria_text") or 0)
    parts = [limit]
    if searches and detailed:
        parts.append(f"We ran {plural(len(searches), 'search', 'searches')} of our copy of the registry: "
                     + "; ".join(describe_searches(facts)) + ".")
    elif searches:
        parts.append(f"We ran {plural(len(searches), 'search', 'searches')} of our copy of the registry (each one "
                     "with its distance and counts is listed under “How we searched”).")
    parts.append(f"Together they found {plural(found, 'different trial')}"
                 + (f", of which {missing:,} {'has' if missing == 1 else 'have'} no criteria text in our copy (only "
                    "their age and sex limits could be checked)." if missing else ", all with criteria text."))
    return " ".join(parts)
