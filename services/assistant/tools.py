"""The fifteen tools the model may call: what each one is for and the JSON schema of its arguments, bound to its
handler (services.assistant.handlers) in one registry (services.assistant.registry)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from services.assistant import handlers
from services.assistant.handlers import ACTIVITY_LEVELS, MAX_SEARCH_PAGES, MAX_SITES, TRIAL_TYPES
from services.assistant.registry import Tool, ToolRegistry
from services.assistant.session import CONVERSATION_PHASES
from services.data.normalize import PHASES, STUDY_STATUSES
from services.eligibility.scoring import Verdict
from services.trials import MAX_TRIALS

CRITERION_STATUSES = ("met", "not_met", "needs_discussion", "not_enough_information")
INTAKE_FIELDS = (
    "diagnosis", "stage", "subtype", "biomarkers", "treatments", "age", "sex", "location",
    "travel_radius", "activity_level", "trial_types", "phases", "preferences", "other",
)  # fmt: skip

_NCT = {"type": "string", "maxLength": 20, "description": "ClinicalTrials.gov id, e.g. NCT01234567"}
_LAT = {"type": "number", "minimum": -90, "maximum": 90}
_LON = {"type": "number", "minimum": -180, "maximum": 180}
_PHASES = {"type": "array", "items": {"type": "string", "enum": list(PHASES)}, "maxItems": 6}
_STATUSES = {"type": "array", "items": {"type": "string", "enum": list(STUDY_STATUSES)}, "maxItems": 9}


def _obj(properties: dict[str, Any], required: Iterable[str] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


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
    "trial_types": {"type": "array", "items": {"type": "string", "enum": list(TRIAL_TYPES)}, "maxItems": 7},
    "other_conditions": {"type": "array", "items": {"type": "string", "maxLength": 150}, "maxItems": 20},
    "notes": {"type": "string", "maxLength": 1500},
}

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
        "verdict": {"type": "string", "enum": [v.value for v in Verdict]},
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
            handlers.search_trials,
            data=True,
        ),
        Tool(
            "get_trial_details",
            "Full record of one trial: summary, arms, interventions, outcomes, sponsor, dates.",
            nct_only,
            handlers.get_trial_details,
            data=True,
        ),
        Tool(
            "get_eligibility_criteria",
            "Eligibility of one trial: age and sex limits, healthy volunteers, and the inclusion and "
            "exclusion criteria as numbered lists.",
            nct_only,
            handlers.get_eligibility_criteria,
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
            handlers.get_trial_locations,
            data=True,
        ),
        Tool(
            "get_adverse_events",
            "Side effects reported in a trial's posted results (serious and other, most frequent first). "
            "Many trials have no posted results.",
            nct_only,
            handlers.get_adverse_events,
            data=True,
        ),
        Tool(
            "geocode_location",
            "Turn a place name or US ZIP code into coordinates (offline gazetteer). Says which place was "
            "chosen when the name is ambiguous.",
            _obj({"place": {"type": "string", "maxLength": 200}}, ["place"]),
            handlers.geocode_location,
        ),
        Tool(
            "get_dashboard_stats",
            "Headline numbers for a filter, the same ones the Explore page shows: matching trials, "
            "recruiting, sites, countries, planned enrollment, counts by phase and status.",
            _obj(stats_props),
            handlers.get_dashboard_stats,
        ),
        Tool(
            "save_patient_profile",
            "Save what you have learned about the patient (merged into the saved profile). Call it after "
            "each answer. Set complete=true once diagnosis, age, sex and location are known and the "
            "interview is finished. activity_level fills in the ECOG score automatically.",
            _obj({**_PROFILE_PROPERTIES, "complete": {"type": "boolean"}}),
            handlers.save_patient_profile,
            barrier=True,
        ),
        Tool(
            "update_session_phase",
            "Move the conversation to another phase. The new phase's instructions apply from your next "
            "step. Refused (with the reason) when the phase's preconditions are not met.",
            _obj(
                {
                    "phase": {"type": "string", "enum": list(CONVERSATION_PHASES)},
                    "reason": {"type": "string", "maxLength": 300},
                },
                ["phase"],
            ),
            handlers.update_session_phase,
            barrier=True,
        ),
        Tool(
            "save_matched_trials",
            "Save eligibility assessments (one entry per trial; repeated calls update by NCT id). Each "
            "criterion gets a status and a plain-language version; fit_score is an integer 0-100. Only "
            "trials returned by a search or lookup in this session can be saved.",
            _obj({"trials": {"type": "array", "items": _MATCH, "minItems": 1, "maxItems": 30}}, ["trials"]),
            handlers.save_matched_trials,
            barrier=True,
        ),
        Tool(
            "generate_report",
            "Write the printable report for the trials the patient selected, with your summary, "
            "questions for their doctor and a glossary. The app adds questions grouped by who can answer "
            "them (specialist, radiology, lab, family doctor, trial team) and a reviewer's points per trial.",
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
                        "description": "Leave out: read only from reports made before the app grouped the "
                                       "questions by who can answer them (it now does that itself).",
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
            handlers.generate_report,
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
            handlers.emit_widget,
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
            handlers.emit_trial_cards,
            barrier=True,
        ),
        Tool(
            "emit_status",
            "Show a short progress message at once (e.g. 'Checking trial 3 of 8').",
            _obj({"message": {"type": "string", "maxLength": 200}}, ["message"]),
            handlers.emit_status,
        ),
        Tool(
            "emit_partial_filters",
            "Update the dashboard filters with what the patient just told you, so the Explore and Map "
            "pages show their landscape. Pass only the fields that changed.",
            _obj(_FILTER_PROPERTIES),
            handlers.emit_partial_filters,
            barrier=True,
        ),
    ]
    return ToolRegistry(tools)
