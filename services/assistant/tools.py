"""The assistant's tools: JSON schemas, argument validation, the registry, session tools and the TrialBackend seam."""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any, NotRequired, Protocol, TypedDict

from services import condition as condition_model
from services.assistant.session import NCT_RE, PHASES, AssistantSession
from services.eligibility.scoring import fit_from_statuses, rank_key, reach_note, within_reach
from services.errors import TrialLandscapeError
from services.freshness import status_note
from services.provenance import NOT_IN_COPY

log = logging.getLogger(__name__)

MAX_TRIALS = 15
MAX_SEARCH_PAGES = 20  # pages of one search a caller may ask for (20 × 15 trials)
MAX_TITLE = 120
MAX_INTERVENTIONS = 3
MAX_SITES = 10
MAX_RESULT_CHARS = 24_000
# What tool results and cards say when our copy of a record has no eligibility criteria text.
CRITERIA_MISSING = "missing from this copy"
CRITERIA_MISSING_NOTE = (
    "Our copy of this registry record has no eligibility criteria text (it came from a download that leaves it "
    "out); the registry itself has it at ClinicalTrials.gov. Only the age and sex limits can be checked here: mark "
    "every other requirement 'not_enough_information' and never call the trial 'eligible'."
)
DEFAULT_STATUSES: tuple[str, ...] = ("RECRUITING", "NOT_YET_RECRUITING")
STATUSES = (
    "RECRUITING", "NOT_YET_RECRUITING", "ENROLLING_BY_INVITATION", "ACTIVE_NOT_RECRUITING",
    "COMPLETED", "SUSPENDED", "TERMINATED", "WITHDRAWN", "UNKNOWN",
)  # fmt: skip
TRIAL_PHASES = ("EARLY_PHASE1", "PHASE1", "PHASE2", "PHASE3", "PHASE4", "NA")
VERDICTS = ("eligible", "excluded", "uncertain", "not_relevant")
CRITERION_STATUSES = ("met", "not_met", "needs_discussion", "not_enough_information")
INTAKE_FIELDS = (
    "diagnosis", "stage", "subtype", "biomarkers", "treatments", "age", "sex", "location",
    "travel_radius", "activity_level", "trial_types", "phases", "preferences", "other",
)  # fmt: skip
# ECOG performance status in words a patient recognises; the widget for activity level uses exactly these.
ACTIVITY_LEVELS: dict[str, int] = {
    "Fully active, no limits on what I can do": 0,
    "I can't do hard physical work, but I can do light work or housework": 1,
    "I look after myself but can't work; I'm up and about more than half the day": 2,
    "I can only partly look after myself; in a bed or chair more than half the day": 3,
    "I need help with all self-care and am mostly in a bed or chair": 4,
}

# --------------------------------------------------------------------------------------------
# The seam to the data layer: another module implements this over the database.


@dataclass(frozen=True)
class TrialQuery:
    """What a trial search or a stats request asks for (mirrors the shared dashboard filters).

    Statuses and phases use the API v2 spellings; a trial matches if any of its phases is listed.
    age_years and sex ("FEMALE"/"MALE") describe the patient: keep trials whose limits admit them
    (a missing age limit means no limit). radius_miles applies only with latitude and longitude.
    """

    condition: str | None = None
    intervention: str | None = None
    statuses: tuple[str, ...] = DEFAULT_STATUSES
    phases: tuple[str, ...] = ()
    latitude: float | None = None
    longitude: float | None = None
    radius_miles: float | None = None
    age_years: float | None = None
    sex: str | None = None
    country: str | None = None
    limit: int = MAX_TRIALS
    offset: int = 0


class NearestSite(TypedDict, total=False):
    """The closest site of a trial to the patient."""

    facility: str
    city: str
    state: str
    country: str
    distance_miles: float | None


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
    """A search answer: the total number of matches and the first `limit` trials."""

    total: int
    trials: list[TrialSummary]


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


class TrialDetails(TypedDict, total=False):
    """The full record of one trial, as far as the database has it."""

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
    start_date: str | None
    completion_date: str | None
    summary: str
    arms: list[dict[str, str]]
    primary_outcomes: list[str]
    has_results: bool
    primary_completion_date: str | None
    last_update_date: str | None
    not_in_this_copy: list[str]  # fields our copy lacks because its source did not carry them (services.provenance)
    copy_note: str
    criteria_source: str


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


class ReportOutput(TypedDict):
    """The rendered report."""

    html: str


class TrialBackend(Protocol):
    """Data access for the assistant's data tools; return None for an unknown NCT id."""

    def search_trials(self, query: TrialQuery) -> SearchPage:
        """Trials matching the query, nearest site first when an origin is given."""
        ...

    def get_trial_details(self, nct_id: str) -> TrialDetails | None:
        """The full record of one trial."""
        ...

    def get_eligibility_criteria(self, nct_id: str) -> EligibilityInfo | None:
        """Eligibility limits and criteria of one trial."""
        ...

    def get_trial_locations(self, nct_id: str, origin: tuple[float, float] | None) -> list[Site] | None:
        """All sites of one trial, with distances from origin (lat, lon) when given."""
        ...

    def get_adverse_events(self, nct_id: str) -> AdverseEvents | None:
        """Adverse events from one trial's posted results."""
        ...

    def geocode_location(self, text: str) -> Place | None:
        """Coordinates for a place name or ZIP code, offline; None when unknown."""
        ...

    def get_dashboard_stats(self, query: TrialQuery) -> DashboardStats:
        """The Explore page's headline numbers for the query."""
        ...

    def generate_report(self, request: ReportRequest) -> ReportOutput:
        """Render the patient's report for the selected trials."""
        ...


# --------------------------------------------------------------------------------------------
# A validator for the part of JSON Schema the tool schemas use.

SUPPORTED_KEYWORDS = frozenset(
    {
        "type", "properties", "required", "enum", "items", "minimum", "maximum", "maxLength",
        "minItems", "maxItems", "additionalProperties", "description",
    }
)  # fmt: skip
_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def check_schema(schema: Mapping[str, Any], path: str = "$") -> None:
    """Raise ValueError if a schema uses a keyword the validator does not implement."""
    unknown = set(schema) - SUPPORTED_KEYWORDS
    if unknown:
        raise ValueError(f"schema at {path} uses unsupported keywords: {', '.join(sorted(unknown))}")
    for name, sub in schema.get("properties", {}).items():
        check_schema(sub, f"{path}.{name}")
    if "items" in schema:
        check_schema(schema["items"], f"{path}[]")


def validate(schema: Mapping[str, Any], value: Any, path: str = "$") -> list[str]:
    """Every way value breaks schema, as '<path>: <problem>' lines (empty when valid)."""
    problems: list[str] = []
    kind = schema.get("type")
    if kind is not None:
        kinds = [kind] if isinstance(kind, str) else list(kind)
        if not any(_TYPES[k](value) for k in kinds):
            return [f"{path}: must be {' or '.join(kinds)}, got {_json_type(value)}"]
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(json.dumps(v) for v in schema["enum"])
        problems.append(f"{path}: must be one of {allowed}, got {json.dumps(value)[:60]}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"{path}: must be >= {schema['minimum']}, got {value}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"{path}: must be <= {schema['maximum']}, got {value}")
    if isinstance(value, str) and "maxLength" in schema and len(value) > schema["maxLength"]:
        problems.append(f"{path}: must be at most {schema['maxLength']} characters, got {len(value)}")
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            problems.append(f"{path}: must have at least {schema['minItems']} items, got {len(value)}")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            problems.append(f"{path}: must have at most {schema['maxItems']} items, got {len(value)}")
        if "items" in schema:
            for i, item in enumerate(value):
                problems.extend(validate(schema["items"], item, f"{path}[{i}]"))
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                problems.append(f"{path}: missing required property '{name}'")
        if schema.get("additionalProperties") is False:
            for name in value:
                if name not in properties:
                    allowed = ", ".join(properties) or "none"
                    problems.append(f"{path}: unknown property '{name}' (allowed: {allowed})")
        for name, sub in properties.items():
            if name in value:
                problems.extend(validate(sub, value[name], f"{path}.{name}"))
    return problems


def _json_type(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _TYPES[name](value):
            return name
    return type(value).__name__


# --------------------------------------------------------------------------------------------
# Registry and execution.


class ToolError(Exception):
    """A problem the model can fix: returned to it as an error tool result."""


@dataclass
class ToolContext:
    """What a tool handler may touch: the session (under lock), the backend, event and status queues."""

    session: AssistantSession
    backend: TrialBackend
    lock: threading.RLock = field(default_factory=threading.RLock)
    statuses: queue.SimpleQueue[str] = field(default_factory=queue.SimpleQueue)
    events: list[dict[str, Any]] = field(default_factory=list)
    today: date | None = None  # the date status freshness is judged on (None: the real today)

    def emit(self, event: dict[str, Any]) -> None:
        """Queue a UI event; the page gets it after this turn's text."""
        self.events.append(event)

    def status(self, message: str) -> None:
        """Send a progress message; the orchestrator delivers it at once."""
        self.statuses.put(message)

    def for_call(self) -> ToolContext:
        """A context for one tool call: shared session, lock and status queue; its own event list."""
        return ToolContext(self.session, self.backend, self.lock, self.statuses, [], self.today)


Handler = Callable[[dict[str, Any], ToolContext], dict[str, Any]]


@dataclass(frozen=True)
class Tool:
    """One tool: schema for the model, handler for the app.

    barrier: its effect on the session depends on order, so it runs alone, in the order the model asked.
    data: its result comes from the database, so NCT ids in it count as seen (grounding).
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Handler
    barrier: bool = False
    data: bool = False

    def definition(self) -> dict[str, Any]:
        """The tool as the Messages API expects it."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


@dataclass(frozen=True)
class ToolOutcome:
    """The result of one tool call: JSON text for the model, error flag, UI events it queued."""

    content: str
    is_error: bool
    events: tuple[dict[str, Any], ...] = ()


class ToolRegistry:
    """The set of tools the model may call; runs a call and never raises."""

    def __init__(self, tools: Iterable[Tool]) -> None:
        self.tools: dict[str, Tool] = {}
        for tool in tools:
            check_schema(tool.input_schema, tool.name)
            self.tools[tool.name] = tool

    def definitions(self, cache: bool = True) -> list[dict[str, Any]]:
        """API tool definitions; the last carries a cache breakpoint so the tool list is cached."""
        defs = [tool.definition() for tool in self.tools.values()]
        if cache and defs:
            defs[-1] = dict(defs[-1], cache_control={"type": "ephemeral"})
        return defs

    def is_barrier(self, name: str) -> bool:
        """Whether a call to this tool must run alone and in order."""
        tool = self.tools.get(name)
        return tool is None or tool.barrier

    def run(self, name: str, args: Any, ctx: ToolContext) -> ToolOutcome:
        """Validate and run one call; every failure becomes an error result the model can read."""
        tool = self.tools.get(name)
        if tool is None:
            return _error(f"There is no tool named '{name}'. Available: {', '.join(self.tools)}.")
        problems = validate(tool.input_schema, args)
        if problems:
            return _error(f"Invalid arguments for {name}; fix these and call again.", problems=problems)
        call_ctx = ctx.for_call()
        try:
            result = tool.handler(args, call_ctx)
        except ToolError as exc:
            return _error(str(exc))
        except TrialLandscapeError as exc:
            return _error(f"{name} failed: {exc}", hint=exc.hint or None)
        except Exception as exc:  # a tool bug must not end the conversation; the model is told and can go on
            log.exception("tool %s crashed", name)
            return _error(f"{name} failed unexpectedly ({type(exc).__name__}: {exc}).")
        content = _dump(result)
        if tool.data:
            with ctx.lock:
                ctx.session.note_seen(NCT_RE.findall(content))
        return ToolOutcome(content, False, tuple(call_ctx.events))


def _dump(result: Any) -> str:
    text = json.dumps(result, ensure_ascii=False, default=str)
    if len(text) > MAX_RESULT_CHARS:
        return text[:MAX_RESULT_CHARS] + " …[result cut here: too long]"
    return text


def _error(message: str, **extra: Any) -> ToolOutcome:
    payload = {"error": message, **{k: v for k, v in extra.items() if v is not None}}
    return ToolOutcome(json.dumps(payload, ensure_ascii=False), True)


# --------------------------------------------------------------------------------------------
# Compact results.


def truncate(text: str | None, limit: int) -> str | None:
    """Text cut to limit characters with an ellipsis; None stays None."""
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…"


def compact_trial(trial: Mapping[str, Any], today: date | None = None) -> dict[str, Any]:
    """A search hit trimmed for the model: short title, at most 3 interventions, no search-only fields; says when
    the criteria text is missing from our copy and when an open status may be out of date."""
    interventions = list(trial.get("interventions") or [])
    out: dict[str, Any] = {
        "nct_id": trial["nct_id"],
        "title": truncate(trial.get("title") or "", MAX_TITLE),
        "status": trial.get("status"),
        "phases": list(trial.get("phases") or []),
        "conditions": [truncate(c, 80) for c in list(trial.get("conditions") or [])[:5]],
        "interventions": [truncate(i, 80) for i in interventions[:MAX_INTERVENTIONS]],
        "sponsor": truncate(trial.get("sponsor"), 80),
        "enrollment": trial.get("enrollment"),
        "start_date": trial.get("start_date"),
        "ages": _ages(trial.get("min_age"), trial.get("max_age")),
        "sex": trial.get("sex"),
        "site_count": trial.get("site_count"),
        "nearest_site": trial.get("nearest_site"),
    }
    if len(interventions) > MAX_INTERVENTIONS:
        out["more_interventions"] = len(interventions) - MAX_INTERVENTIONS
    if trial.get("has_criteria") is False:
        out["criteria_text"] = CRITERIA_MISSING
    stale = status_note(trial.get("status"), primary_completion=trial.get("primary_completion_date"),
                        last_update=trial.get("last_update_date"), today=today)
    if stale:
        out["status_note"] = stale
    return out


def _ages(min_age: str | None, max_age: str | None) -> str:
    low = min_age if min_age and min_age.upper() != "N/A" else "no minimum"
    high = max_age if max_age and max_age.upper() != "N/A" else "no maximum"
    return f"{low} to {high}"


def nearest_sites(sites: list[Site], limit: int = MAX_SITES) -> list[Site]:
    """Sites ordered by distance (unknown distances last), at most limit."""
    return sorted(sites, key=lambda s: (s.get("distance_miles") is None, s.get("distance_miles") or 0.0))[
        :limit
    ]


def condition_matches(condition_text: str, trial: Mapping[str, Any]) -> bool:
    """Whether a trial is about the condition under the one condition model (services.condition): one of its
    condition names, MeSH terms or keywords matches, exactly as the search's SQL decides."""
    terms = [*(trial.get("conditions") or []), *(trial.get("mesh_terms") or []), *(trial.get("keywords") or [])]
    return condition_model.expand(condition_text).matches_any(str(t) for t in terms)


# --------------------------------------------------------------------------------------------
# Shared schema pieces.

_NCT = {"type": "string", "maxLength": 20, "description": "ClinicalTrials.gov id, e.g. NCT01234567"}
_LAT = {"type": "number", "minimum": -90, "maximum": 90}
_LON = {"type": "number", "minimum": -180, "maximum": 180}
_PHASES = {"type": "array", "items": {"type": "string", "enum": list(TRIAL_PHASES)}, "maxItems": 6}
_STATUSES = {"type": "array", "items": {"type": "string", "enum": list(STATUSES)}, "maxItems": 9}


def _obj(properties: dict[str, Any], required: Iterable[str] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def _nct_arg(args: Mapping[str, Any], key: str = "nct_id") -> str:
    value = str(args[key]).strip().upper()
    if not NCT_RE.fullmatch(value):
        raise ToolError(f"'{args[key]}' is not an NCT id; it must look like NCT followed by 8 digits.")
    return value


def _not_found(nct_id: str) -> ToolError:
    return ToolError(f"No trial {nct_id} in the database. Check the id against your search results.")


# --------------------------------------------------------------------------------------------
# Data tools (through TrialBackend).


def _query_from_args(args: dict[str, Any], **extra: Any) -> TrialQuery:
    """The TrialQuery a search or stats tool call asks for (validated arguments)."""
    return TrialQuery(
        condition=args.get("condition"),
        intervention=args.get("intervention"),
        statuses=tuple(args.get("statuses") or DEFAULT_STATUSES),
        phases=tuple(args.get("phases") or ()),
        latitude=args.get("latitude"),
        longitude=args.get("longitude"),
        radius_miles=args.get("radius_miles"),
        age_years=args.get("age"),
        sex=args.get("sex"),
        country=args.get("country"),
        **extra,
    )


def _search_trials(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    condition, intervention = args.get("condition"), args.get("intervention")
    if not condition and not intervention:
        raise ToolError("Give a condition, an intervention, or both.")
    if ("latitude" in args) != ("longitude" in args):
        raise ToolError("Give latitude and longitude together (geocode_location turns a place into both).")
    if "radius_miles" in args and "latitude" not in args:
        raise ToolError(
            "radius_miles needs latitude and longitude; call geocode_location for the place first."
        )
    # The condition is checked inside the search (the SQL of the one condition model), before the limit, so a
    # page is a full page of trials about the condition.
    limit = min(int(args.get("limit", MAX_TRIALS)), MAX_TRIALS)
    page_no = int(args.get("page", 1))
    query = _query_from_args(args, limit=limit, offset=(page_no - 1) * limit)
    page = ctx.backend.search_trials(query)
    compact = [compact_trial(t, ctx.today) for t in list(page["trials"])[:limit]]
    strategy = args["strategy"]
    with ctx.lock:
        new = 0
        for trial in compact:
            known = ctx.session.candidates.get(trial["nct_id"])
            if known is None:
                new += 1
                ctx.session.candidates[trial["nct_id"]] = dict(trial, strategies=[strategy])
            elif strategy not in known["strategies"]:
                known["strategies"].append(strategy)
        total_candidates = len(ctx.session.candidates)
        entry = {
            "strategy": strategy, "condition": condition, "intervention": intervention,
            "radius_miles": args.get("radius_miles") if "latitude" in args else None,
            "phases": list(args.get("phases") or []), "total_matching": page["total"], "returned": len(compact),
            "new": new, "without_criteria_text": sum(1 for t in compact if t.get("criteria_text") == CRITERIA_MISSING),
        }
        last = ctx.session.searches[-1] if ctx.session.searches else None
        same = ("strategy", "condition", "intervention", "radius_miles", "phases")
        if page_no > 1 and last is not None and all(last.get(k) == entry[k] for k in same):
            for k in ("returned", "new", "without_criteria_text"):  # a further page of the same search
                last[k] = int(last.get(k) or 0) + int(entry[k])
        else:
            ctx.session.searches.append(entry)
    result: dict[str, Any] = {
        "strategy": strategy,
        "total_matching": page["total"],
        "returned": len(compact),
        "page": page_no,
        "more_pages": query.offset + len(compact) < page["total"],
        "new_this_session": new,
        "unique_candidates_so_far": total_candidates,
        "trials": compact,
    }
    return result


def _get_trial_details(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    nct_id = _nct_arg(args)
    details = ctx.backend.get_trial_details(nct_id)
    if details is None:
        raise _not_found(nct_id)
    out: dict[str, Any] = dict(details)
    out["title"] = truncate(details.get("title"), MAX_TITLE)
    out["official_title"] = truncate(details.get("official_title"), 300)
    out["summary"] = truncate(details.get("summary"), 2000)
    interventions = list(details.get("interventions") or [])
    out["interventions"] = interventions[:MAX_INTERVENTIONS]
    if len(interventions) > MAX_INTERVENTIONS:
        out["more_interventions"] = len(interventions) - MAX_INTERVENTIONS
    out["arms"] = [
        {k: (truncate(v, 300) if isinstance(v, str) else v) for k, v in arm.items()}
        for arm in list(details.get("arms") or [])[:6]
    ]
    out["primary_outcomes"] = [truncate(o, 200) for o in list(details.get("primary_outcomes") or [])[:5]]
    out["collaborators"] = list(details.get("collaborators") or [])[:5]
    out["url"] = f"https://clinicaltrials.gov/study/{nct_id}"
    return out


def _get_eligibility_criteria(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    nct_id = _nct_arg(args)
    info = ctx.backend.get_eligibility_criteria(nct_id)
    if info is None:
        raise _not_found(nct_id)
    lacks = set(info.get("not_in_this_copy") or ())  # our copy lacks these: say so, never "no limit"
    no_ages = info.get("min_age") is None and info.get("max_age") is None
    out: dict[str, Any] = {
        "nct_id": nct_id,
        "ages": NOT_IN_COPY if no_ages and "ages" in lacks else _ages(info.get("min_age"), info.get("max_age")),
        "sex": info.get("sex") or (NOT_IN_COPY if "sex" in lacks else None),
        "healthy_volunteers": NOT_IN_COPY if info.get("healthy_volunteers") is None and "healthy_volunteers" in lacks
        else info.get("healthy_volunteers"),
        "inclusion": [truncate(c, 500) for c in list(info.get("inclusion") or [])[:40]],
        "exclusion": [truncate(c, 500) for c in list(info.get("exclusion") or [])[:40]],
    }
    if not out["inclusion"] and not out["exclusion"]:
        text = (info.get("criteria_text") or "").strip()
        if text:
            out["criteria_text"] = truncate(text, 6000)
        else:
            out["criteria_text"] = CRITERIA_MISSING
            out["note"] = CRITERIA_MISSING_NOTE
    out.update({k: info[k] for k in ("not_in_this_copy", "copy_note", "criteria_source") if info.get(k)})  # type: ignore[literal-required]
    return out


def _get_trial_locations(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    nct_id = _nct_arg(args)
    if ("latitude" in args) != ("longitude" in args):
        raise ToolError("Give latitude and longitude together, or neither.")
    origin = (args["latitude"], args["longitude"]) if "latitude" in args else None
    if (
        origin is None
        and "latitude" in ctx.session.patient_profile
        and "longitude" in ctx.session.patient_profile
    ):
        origin = (ctx.session.patient_profile["latitude"], ctx.session.patient_profile["longitude"])
    sites = ctx.backend.get_trial_locations(nct_id, origin)
    if sites is None:
        raise _not_found(nct_id)
    return {
        "nct_id": nct_id,
        "total_sites": len(sites),
        "measured_from": list(origin) if origin else None,
        "sites": nearest_sites(sites, min(args.get("limit", MAX_SITES), MAX_SITES)),
    }


def _get_adverse_events(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    nct_id = _nct_arg(args)
    report = ctx.backend.get_adverse_events(nct_id)
    if report is None:
        raise _not_found(nct_id)
    if not report["has_results"]:
        return {"nct_id": nct_id, "has_results": False, "note": "This trial has not posted results."}

    def top(serious: bool) -> list[dict[str, Any]]:
        events = [e for e in report["events"] if bool(e.get("serious")) is serious]
        events.sort(key=lambda e: -(e.get("subjects_affected") or 0))
        rows = []
        for e in events[:10]:
            at_risk = e.get("subjects_at_risk") or 0
            affected = e.get("subjects_affected") or 0
            rows.append(
                {
                    "term": e.get("term"),
                    "organ_system": e.get("organ_system"),
                    "subjects_affected": affected,
                    "subjects_at_risk": at_risk,
                    "percent": round(100.0 * affected / at_risk, 1) if at_risk else None,
                }
            )
        return rows

    return {"nct_id": nct_id, "has_results": True, "serious": top(True), "other": top(False)}


def _geocode_location(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    place = ctx.backend.geocode_location(args["place"])
    if place is None:
        raise ToolError(
            f"Could not find '{args['place']}'. Ask for a city with its state or country, or a US ZIP code."
        )
    return dict(place)


def _get_dashboard_stats(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return dict(ctx.backend.get_dashboard_stats(_query_from_args(args)))


STRATEGY_WORDS = {
    "exact": "your condition near you", "broader": "a broader name for your condition", "intervention":
    "the treatment you asked about", "wider_radius": "a wider distance", "phase": "the trial phases you prefer",
    "other": "another search",
}


def search_facts(session: AssistantSession) -> dict[str, Any]:
    """What the session's searches really did: the travel limit, each search in order with its distance and counts,
    the trials found, how many of them lack criteria text in our copy, and how many were checked."""
    found = list(session.candidates.values())
    return {
        "radius_miles": _radius(session),
        "place": session.patient_profile.get("location"),
        "searches": [dict(s) for s in session.searches],
        "found": len(found),
        "without_criteria_text": sum(1 for t in found if t.get("criteria_text") == CRITERIA_MISSING),
        "checked": len(session.matched_trials),
    }


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else plural or word + 's'}"


def describe_searches(facts: Mapping[str, Any]) -> list[str]:
    """One sentence per search that ran: what it looked for, how far, and how many trials it returned."""
    lines = []
    for entry in facts.get("searches") or []:
        what = entry.get("condition") or ""
        if entry.get("intervention"):
            what = f"{what} + {entry['intervention']}" if what else str(entry["intervention"])
        radius = entry.get("radius_miles")
        where = f"within {radius:,.0f} miles" if isinstance(radius, int | float) else "at any distance"
        phases = f", phases {', '.join(entry['phases'])}" if entry.get("phases") else ""
        lines.append(f"{STRATEGY_WORDS.get(str(entry.get('strategy')), str(entry.get('strategy')))} (“{what}”, {where}"
                     f"{phases}): {_plural(int(entry.get('returned') or 0), 'trial')}, "
                     f"{int(entry.get('new') or 0):,} new")
    return lines


def search_sentence(facts: Mapping[str, Any], *, detailed: bool = True) -> str:
    """A truthful summary of the search: radius, the searches run (with each one's counts when detailed), criteria
    text coverage."""
    radius = facts.get("radius_miles")
    place = facts.get("place") or "your place"
    limit = (f"You said you can travel up to {radius:,.0f} miles from {place}." if isinstance(radius, int | float)
             else f"You set no travel limit from {place}.")
    searches = facts.get("searches") or []
    found = int(facts.get("found") or 0)
    missing = int(facts.get("without_criteria_text") or 0)
    parts = [limit]
    if searches and detailed:
        parts.append(f"We ran {_plural(len(searches), 'search', 'searches')} of our copy of the registry: "
                     + "; ".join(describe_searches(facts)) + ".")
    elif searches:
        parts.append(f"We ran {_plural(len(searches), 'search', 'searches')} of our copy of the registry (each one "
                     "with its distance and counts is listed under “How we searched”).")
    parts.append(f"Together they found {_plural(found, 'different trial')}"
                 + (f", of which {missing:,} {'has' if missing == 1 else 'have'} no criteria text in our copy (only "
                    "their age and sex limits could be checked)." if missing else ", all with criteria text."))
    return " ".join(parts)


def _generate_report(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    session = ctx.session
    with ctx.lock:
        if not session.selected_nct_ids:
            raise ToolError(
                "The patient has not chosen any trials yet. Show the trial cards and wait for their choice."
            )
        trials = []
        for nct_id in session.selected_nct_ids:
            match = session.matched(nct_id)
            if match is None:
                raise ToolError(
                    f"{nct_id} was selected but has no saved match; score it with save_matched_trials first."
                )
            trials.append(dict(match))
        request = ReportRequest(
            session_id=session.id,
            patient_profile=dict(session.patient_profile),
            intake_answers=dict(session.intake_answers),
            trials=tuple(trials),
            summary=args["summary"],
            questions_for_doctor=tuple(args["questions_for_doctor"]),
            glossary=tuple(dict(g) for g in args["glossary"]),
            question_groups=tuple((g["topic"], tuple(g["questions"])) for g in args.get("question_groups") or []),
            search_facts=search_facts(session),
        )
    output = ctx.backend.generate_report(request)
    with ctx.lock:
        session.report_html = output["html"]
        session.flags["report_complete"] = True
    ids = [t["nct_id"] for t in request.trials]
    ctx.emit({"type": "report_ready", "trials": ids})
    return {"report": "ready", "trials": ids, "characters": len(output["html"])}


# --------------------------------------------------------------------------------------------
# Session and UI tools.

_PROFILE_PROPERTIES: dict[str, Any] = {
    "diagnosis": {"type": "string", "maxLength": 200},
    "stage": {"type": "string", "maxLength": 100},
    "subtype": {"type": "string", "maxLength": 150},
    "biomarkers": {"type": "array", "items": {"type": "string", "maxLength": 120}, "maxItems": 25},
    "treatments": {"type": "array", "items": {"type": "string", "maxLength": 200}, "maxItems": 25},
    "age": {"type": "integer", "minimum": 0, "maximum": 120},
    "sex": {"type": "string", "enum": ["female", "male"]},
    "location": {"type": "string", "maxLength": 200},
    "latitude": _LAT,
    "longitude": _LON,
    "travel_radius_miles": {"type": ["number", "null"], "minimum": 1, "maximum": 12500},
    "activity_level": {"type": "string", "enum": list(ACTIVITY_LEVELS)},
    "ecog": {"type": "integer", "minimum": 0, "maximum": 4},
    "preferred_phases": _PHASES,
    "trial_types": {
        "type": "array",
        "items": {
            "type": "string",
            "enum": ["drug", "biological", "device", "procedure", "radiation", "behavioral", "other"],
        },
        "maxItems": 7,
    },
    "other_conditions": {"type": "array", "items": {"type": "string", "maxLength": 150}, "maxItems": 20},
    "notes": {"type": "string", "maxLength": 1500},
}
REQUIRED_FOR_COMPLETE = ("diagnosis", "age", "sex", "location")


def _save_patient_profile(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    session = ctx.session
    fields = {k: v for k, v in args.items() if k != "complete"}
    if "activity_level" in fields and "ecog" not in fields:
        fields["ecog"] = ACTIVITY_LEVELS[fields["activity_level"]]
    with ctx.lock:
        session.patient_profile.update(fields)
        if session.phase == "intake":
            session.intake_answers.update(fields)
        missing = [k for k in REQUIRED_FOR_COMPLETE if k not in session.patient_profile]
        if args.get("complete"):
            if missing:
                raise ToolError(
                    f"Saved, but the profile cannot be marked complete: still missing {', '.join(missing)}. "
                    "Ask the patient for these first."
                )
            session.flags["intake_complete"] = True
        return {
            "saved": sorted(fields),
            "complete": session.flags["intake_complete"],
            "still_missing": missing,
        }


def _update_session_phase(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    session = ctx.session
    target = args["phase"]
    with ctx.lock:
        previous = session.phase
        if target == previous:
            return {"phase": target, "changed": False}
        blocker = _phase_blocker(session, target)
        if blocker:
            raise ToolError(f"Cannot move to {target} yet: {blocker}")
        if target == "matching":
            session.flags["search_complete"] = True
        elif target == "selection":
            session.flags["matching_complete"] = True
        session.phase = target
    ctx.emit({"type": "phase", "phase": target, "previous": previous})
    return {"phase": target, "previous": previous, "changed": True}


def _phase_blocker(session: AssistantSession, target: str) -> str | None:
    if (
        target in ("search", "matching", "selection", "report", "followup")
        and not session.flags["intake_complete"]
    ):
        return "the patient profile is not complete; save it with save_patient_profile(complete=true) first."
    if target == "matching" and not session.candidates:
        return "no trials have been found yet; run search_trials first."
    if target == "selection" and not session.matched_trials:
        return "no trials have been scored yet; save them with save_matched_trials first."
    if target == "report" and not session.selected_nct_ids:
        return "the patient has not chosen any trials. Show the trial cards and wait for their choice."
    if target == "followup" and session.report_html is None:
        return "there is no report yet; call generate_report first."
    return None


_CRITERION = _obj(
    {
        "type": {"type": "string", "enum": ["inclusion", "exclusion"]},
        "criterion": {"type": "string", "maxLength": 600},
        "status": {"type": "string", "enum": list(CRITERION_STATUSES)},
        "plain": {"type": "string", "maxLength": 400},
        "reason": {"type": "string", "maxLength": 400},
    },
    ["type", "criterion", "status", "plain"],
)
_UNKNOWN = _obj(
    {
        "kind": {"type": "string", "enum": ["record", "question", "test"]},
        "text": {"type": "string", "maxLength": 300},
        "topic": {"type": "string", "maxLength": 80, "description": "For questions: the topic it is grouped under."},
    },
    ["kind", "text"],
)
_MATCH = _obj(
    {
        "nct_id": _NCT,
        "fit_score": {"type": "integer", "minimum": 0, "maximum": 100,
                      "description": "Ignored: the app computes the fit score from the criteria statuses."},
        "verdict": {"type": "string", "enum": list(VERDICTS)},
        "summary": {"type": "string", "maxLength": 700},
        "criteria": {"type": "array", "items": _CRITERION, "maxItems": 60},
        "unknowns": {"type": "array", "items": _UNKNOWN, "maxItems": 20},
        "what_to_expect": {"type": "string", "maxLength": 900},
        "nearest_site": {"type": "string", "maxLength": 300},
        "distance_miles": {"type": ["number", "null"], "minimum": 0,
                           "description": "Miles to the nearest site (default: from the search result)."},
    },
    ["nct_id", "verdict", "summary", "criteria", "unknowns"],
)


def _nearest_miles(match: Mapping[str, Any], candidate: Mapping[str, Any]) -> float | None:
    if isinstance(match.get("distance_miles"), int | float):
        return float(match["distance_miles"])
    site = candidate.get("nearest_site")
    miles = site.get("distance_miles") if isinstance(site, Mapping) else None
    return float(miles) if isinstance(miles, int | float) else None


def _radius(session: AssistantSession) -> float | None:
    radius = session.patient_profile.get("travel_radius_miles")
    return float(radius) if isinstance(radius, int | float) else None


def score_match(session: AssistantSession, match: dict[str, Any]) -> dict[str, Any]:
    """The match with the app's own fit score, band and explanation (from its criteria statuses and verdict), and
    its distance against the patient's travel limit and its status freshness (from the search result)."""
    candidate = session.candidates.get(match["nct_id"], {})
    missing = candidate.get("criteria_text") == CRITERIA_MISSING
    fit = fit_from_statuses([c["status"] for c in match["criteria"]], match["verdict"], criteria_missing=missing)
    miles = _nearest_miles(match, candidate)
    radius = _radius(session)
    scored = dict(match, fit_score=fit.score, fit_band=fit.band.value if fit.band else None,
                  fit_explanation=fit.explanation, distance_miles=miles, within_reach=within_reach(miles, radius),
                  distance_note=reach_note(miles, radius))
    if missing:
        scored["criteria_text"] = CRITERIA_MISSING
    if candidate.get("status_note"):
        scored["status_note"] = candidate["status_note"]
    return scored


def _save_matched_trials(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    session = ctx.session
    problems: list[str] = []
    checked: list[dict[str, Any]] = []
    with ctx.lock:
        for i, raw in enumerate(args["trials"]):
            match = dict(raw)
            try:
                match["nct_id"] = _nct_arg(match)
            except ToolError as exc:
                problems.append(f"trials[{i}]: {exc}")
                continue
            nct_id = match["nct_id"]
            if nct_id not in session.seen_nct_ids:
                problems.append(
                    f"trials[{i}]: {nct_id} did not come from any search or lookup in this session."
                )
                continue
            statuses = {c["status"] for c in match["criteria"]}
            if match["verdict"] == "eligible" and not statuses & {"met", "not_met"}:
                problems.append(
                    f"trials[{i}]: verdict 'eligible' with no criterion judged (none is 'met'); a trial can only be "
                    "called eligible when its criteria were checked. Use 'uncertain'"
                    + (" (its criteria text is missing from this copy)"
                       if session.candidates.get(nct_id, {}).get("criteria_text") == CRITERIA_MISSING else "") + "."
                )
                continue
            if match["verdict"] == "eligible" and "not_met" in statuses:
                problems.append(
                    f"trials[{i}]: verdict 'eligible' but a criterion is 'not_met'; use 'excluded' or fix the criterion."
                )
                continue
            if match["verdict"] == "excluded" and "not_met" not in statuses:
                problems.append(
                    f"trials[{i}]: verdict 'excluded' needs at least one criterion marked 'not_met'."
                )
                continue
            candidate = session.candidates.get(nct_id, {})
            match.setdefault("title", candidate.get("title"))
            match.setdefault("status", candidate.get("status"))
            match.setdefault("phases", candidate.get("phases", []))
            checked.append(score_match(session, match))
        if problems:
            raise ToolError("Nothing saved; fix these and send the whole list again: " + " | ".join(problems))
        by_id = {m["nct_id"]: m for m in session.matched_trials}
        by_id.update({m["nct_id"]: m for m in checked})
        session.matched_trials = sorted(by_id.values(), key=rank_key)
        ranking = [[m["nct_id"], m["fit_score"], m["verdict"], m.get("fit_band"), m.get("within_reach")]
                   for m in session.matched_trials]
    return {"saved": [m["nct_id"] for m in checked], "total_matched": len(ranking),
            "ranking_columns": ["nct_id", "fit_score", "verdict", "fit_band", "within_travel_limit"],
            "ranking": ranking,
            "note": "Fit scores are computed by the app from the criteria statuses; the ranking puts trials within "
                    "the patient's travel limit first within each verdict. Show the cards in this order."}


def trial_card(session: AssistantSession, nct_id: str) -> dict[str, Any] | None:
    """The card the page shows for one trial: from its saved match, else from search results."""
    match = session.matched(nct_id)
    candidate = session.candidates.get(nct_id)
    if match is None and candidate is None:
        return None
    base = candidate or {}
    return {
        "nct_id": nct_id,
        "title": (match or {}).get("title") or base.get("title"),
        "status": (match or {}).get("status") or base.get("status"),
        "phases": (match or {}).get("phases") or base.get("phases", []),
        "fit_score": match.get("fit_score") if match else None,
        "verdict": match.get("verdict") if match else None,
        "summary": match.get("summary") if match else None,
        "nearest_site": (match or {}).get("nearest_site") or base.get("nearest_site"),
        "url": f"https://clinicaltrials.gov/study/{nct_id}",
        "fit_band": (match or {}).get("fit_band"),
        "fit_explanation": (match or {}).get("fit_explanation"),
        "distance_note": (match or {}).get("distance_note"),
        "within_reach": (match or {}).get("within_reach"),
        "status_note": (match or {}).get("status_note") or base.get("status_note"),
        "criteria_text": (match or {}).get("criteria_text") or base.get("criteria_text"),
    }


def _emit_trial_cards(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    ids = [_nct_arg({"nct_id": i}) for i in args["nct_ids"]]
    with ctx.lock:
        cards = [trial_card(ctx.session, i) for i in ids]
    unknown = [i for i, card in zip(ids, cards, strict=True) if card is None]
    if unknown:
        raise ToolError(f"No search result or saved match for {', '.join(unknown)}.")
    selectable = args.get("selectable", True)
    ctx.emit({"type": "trial_cards", "selectable": selectable, "trials": cards})
    return {"shown": ids, "selectable": selectable}


def _emit_widget(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    options = list(ACTIVITY_LEVELS) if args["field"] == "activity_level" else list(args.get("options") or [])
    if len(options) < 2:
        raise ToolError("A widget needs at least two options.")
    if len(set(options)) != len(options):
        raise ToolError("Widget options must be different from each other.")
    with ctx.lock:
        widget_id = f"w{len(ctx.session.widgets) + 1}"
        widget = {
            "widget_id": widget_id,
            "field": args["field"],
            "question": args["question"],
            "widget_type": args["widget_type"],
            "options": options,
            "allow_other": args.get("allow_other", False),
        }
        ctx.session.widgets[widget_id] = widget
    ctx.emit({"type": "widget", **widget})
    return {
        "widget_id": widget_id,
        "shown": True,
        "note": "Wait for the patient's answer before asking anything else.",
    }


def _emit_status(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    ctx.status(args["message"])
    return {"shown": True}


_FILTER_PROPERTIES: dict[str, Any] = {
    "condition": {"type": "string", "maxLength": 200},
    "intervention": {"type": "string", "maxLength": 200},
    "age": {"type": "integer", "minimum": 0, "maximum": 120},
    "sex": {"type": "string", "enum": ["FEMALE", "MALE"]},
    "near": {"type": "string", "maxLength": 200},
    "radius": {"type": "number", "minimum": 1, "maximum": 12500},
    "radius_unit": {"type": "string", "enum": ["mi", "km"]},
    "phase": _PHASES,
    "status": _STATUSES,
}


def _emit_partial_filters(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    if not args:
        raise ToolError("Pass at least one filter value.")
    with ctx.lock:
        ctx.session.filters.update(args)
        filters = dict(ctx.session.filters)
    ctx.emit({"type": "filters", "filters": filters})
    return {"filters": filters}


def build_registry() -> ToolRegistry:
    """All fifteen tools with their schemas and handlers."""
    search_props = {
        "strategy": {
            "type": "string",
            "enum": ["exact", "broader", "intervention", "wider_radius", "phase", "other"],
            "description": "Which search strategy this call is (for the summary and deduplication).",
        },
        "condition": {"type": "string", "maxLength": 200},
        "intervention": {"type": "string", "maxLength": 200},
        "latitude": _LAT,
        "longitude": _LON,
        "radius_miles": {"type": "number", "minimum": 1, "maximum": 12500},
        "phases": _PHASES,
        "statuses": _STATUSES,
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "sex": {"type": "string", "enum": ["FEMALE", "MALE"]},
        "country": {"type": "string", "maxLength": 100},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_TRIALS},
        "page": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_PAGES,
                 "description": "1 = the first results; 2 = the next ones (same limit), and so on."},
    }
    stats_props = {k: v for k, v in search_props.items() if k not in ("strategy", "limit", "page")}
    nct_only = _obj({"nct_id": _NCT}, ["nct_id"])
    tools = [
        Tool(
            "search_trials",
            "Search the trial database. Runs on the registry copy in our database, not the web. "
            "Defaults to recruiting and not-yet-recruiting trials. Returns at most 15 trials (nearest site "
            "first when latitude/longitude are given), all about the condition (names, MeSH terms and keywords, with "
            "synonyms, abbreviations and narrower MeSH terms); ask for page 2, 3, … while more_pages is true. "
            "Results are deduplicated by NCT id across calls in this session.",
            _obj(search_props, ["strategy"]),
            _search_trials,
            data=True,
        ),
        Tool(
            "get_trial_details",
            "Full record of one trial: summary, arms, interventions, outcomes, sponsor, dates.",
            nct_only,
            _get_trial_details,
            data=True,
        ),
        Tool(
            "get_eligibility_criteria",
            "Eligibility of one trial: age and sex limits, healthy volunteers, and the inclusion and "
            "exclusion criteria as numbered lists.",
            nct_only,
            _get_eligibility_criteria,
            data=True,
        ),
        Tool(
            "get_trial_locations",
            "Sites of one trial, nearest first (at most 10), with distances in miles from the given "
            "point or, if none is given, from the patient's saved location.",
            _obj(
                {
                    "nct_id": _NCT,
                    "latitude": _LAT,
                    "longitude": _LON,
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SITES},
                },
                ["nct_id"],
            ),
            _get_trial_locations,
            data=True,
        ),
        Tool(
            "get_adverse_events",
            "Side effects reported in a trial's posted results (serious and other, most frequent first). "
            "Many trials have no posted results.",
            nct_only,
            _get_adverse_events,
            data=True,
        ),
        Tool(
            "geocode_location",
            "Turn a place name or US ZIP code into coordinates (offline gazetteer). Says which place was "
            "chosen when the name is ambiguous.",
            _obj({"place": {"type": "string", "maxLength": 200}}, ["place"]),
            _geocode_location,
        ),
        Tool(
            "get_dashboard_stats",
            "Headline numbers for a filter, the same ones the Explore page shows: matching trials, "
            "recruiting, sites, countries, planned enrollment, counts by phase and status.",
            _obj(stats_props),
            _get_dashboard_stats,
        ),
        Tool(
            "save_patient_profile",
            "Save what you have learned about the patient (merged into the saved profile). Call it after "
            "each answer. Set complete=true once diagnosis, age, sex and location are known and the "
            "interview is finished. activity_level fills in the ECOG score automatically.",
            _obj({**_PROFILE_PROPERTIES, "complete": {"type": "boolean"}}),
            _save_patient_profile,
            barrier=True,
        ),
        Tool(
            "update_session_phase",
            "Move the conversation to another phase. The new phase's instructions apply from your next "
            "step. Refused (with the reason) when the phase's preconditions are not met.",
            _obj(
                {
                    "phase": {"type": "string", "enum": list(PHASES)},
                    "reason": {"type": "string", "maxLength": 300},
                },
                ["phase"],
            ),
            _update_session_phase,
            barrier=True,
        ),
        Tool(
            "save_matched_trials",
            "Save eligibility assessments (one entry per trial; repeated calls update by NCT id). Each "
            "criterion gets a status and a plain-language version; fit_score is an integer 0-100. Only "
            "trials returned by a search or lookup in this session can be saved.",
            _obj({"trials": {"type": "array", "items": _MATCH, "minItems": 1, "maxItems": 30}}, ["trials"]),
            _save_matched_trials,
            barrier=True,
        ),
        Tool(
            "generate_report",
            "Write the printable report for the trials the patient selected, with your summary, "
            "questions for their doctor and a glossary.",
            _obj(
                {
                    "summary": {"type": "string", "maxLength": 2000},
                    "questions_for_doctor": {
                        "type": "array",
                        "items": {"type": "string", "maxLength": 300},
                        "minItems": 1,
                        "maxItems": 15,
                    },
                    "question_groups": {
                        "type": "array",
                        "description": "Optional: the same questions grouped by topic, in the order to show them.",
                        "items": _obj(
                            {
                                "topic": {"type": "string", "maxLength": 80},
                                "questions": {"type": "array", "items": {"type": "string", "maxLength": 300},
                                              "minItems": 1, "maxItems": 15},
                            },
                            ["topic", "questions"],
                        ),
                        "maxItems": 10,
                    },
                    "glossary": {
                        "type": "array",
                        "items": _obj(
                            {
                                "term": {"type": "string", "maxLength": 80},
                                "meaning": {"type": "string", "maxLength": 300},
                            },
                            ["term", "meaning"],
                        ),
                        "maxItems": 30,
                    },
                },
                ["summary", "questions_for_doctor", "glossary"],
            ),
            _generate_report,
            barrier=True,
        ),
        Tool(
            "emit_widget",
            "Show the patient a set of choices (single or multi select) for one intake question. For "
            "field 'activity_level' the app supplies the options itself. The answer arrives as the "
            "patient's next message.",
            _obj(
                {
                    "field": {"type": "string", "enum": list(INTAKE_FIELDS)},
                    "question": {"type": "string", "maxLength": 300},
                    "widget_type": {"type": "string", "enum": ["single_select", "multi_select"]},
                    "options": {
                        "type": "array",
                        "items": {"type": "string", "maxLength": 120},
                        "maxItems": 12,
                    },
                    "allow_other": {"type": "boolean"},
                },
                ["field", "question", "widget_type"],
            ),
            _emit_widget,
        ),
        Tool(
            "emit_trial_cards",
            "Show trial cards (title, fit score, verdict, plain summary, nearest site). With "
            "selectable=true the patient can tick the trials they want in their report.",
            _obj(
                {
                    "nct_ids": {"type": "array", "items": _NCT, "minItems": 1, "maxItems": 20},
                    "selectable": {"type": "boolean"},
                },
                ["nct_ids"],
            ),
            _emit_trial_cards,
            barrier=True,
        ),
        Tool(
            "emit_status",
            "Show a short progress message at once (e.g. 'Checking trial 3 of 8').",
            _obj({"message": {"type": "string", "maxLength": 200}}, ["message"]),
            _emit_status,
        ),
        Tool(
            "emit_partial_filters",
            "Update the dashboard filters with what the patient just told you, so the Explore and Map "
            "pages show their landscape. Pass only the fields that changed.",
            _obj(_FILTER_PROPERTIES),
            _emit_partial_filters,
            barrier=True,
        ),
    ]
    return ToolRegistry(tools)
