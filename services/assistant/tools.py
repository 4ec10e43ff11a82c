"""The fifteen tools the model may call: what each one is for and the typed model of its arguments
(services.assistant.arguments, whose JSON schema the model reads), bound to its handler
(services.assistant.handlers) in one registry (services.assistant.registry)."""

from __future__ import annotations

from services.assistant import arguments as a
from services.assistant import handlers
from services.assistant.registry import Tool, ToolRegistry


def build_registry() -> ToolRegistry:
    """All fifteen tools with their schemas and handlers."""
    tools = [
        Tool(
            "search_trials",
            "Search the trial database. Runs on the registry copy in our database, not the web. "
            "Defaults to recruiting and not-yet-recruiting trials. Returns at most 15 trials (nearest site "
            "first when latitude/longitude are given) whose condition names, MeSH terms or keywords match "
            "the condition (with synonyms, abbreviations and narrower MeSH terms); a hit is a candidate to "
            "check, not a match. Ask for page 2, 3, … while more_pages is true. "
            "Results are deduplicated by NCT id across calls in this session.",
            a.SearchQuery,
            handlers.search_trials,
            data=True,
        ),
        Tool(
            "get_trial_details",
            "Full record of one trial: summary, arms, interventions, outcomes, sponsor, dates.",
            a.TrialId,
            handlers.get_trial_details,
            data=True,
        ),
        Tool(
            "get_eligibility_criteria",
            "Eligibility of one trial: age and sex limits, healthy volunteers, and the inclusion and "
            "exclusion criteria as numbered lists.",
            a.TrialId,
            handlers.get_eligibility_criteria,
            data=True,
        ),
        Tool(
            "get_trial_locations",
            "Sites of one trial, nearest first (at most 10), with distances in miles from the given "
            "point or, if none is given, from the patient's saved location.",
            a.SitesQuery,
            handlers.get_trial_locations,
            data=True,
        ),
        Tool(
            "get_adverse_events",
            "Side effects reported in a trial's posted results (serious and other, most frequent first). "
            "Many trials have no posted results.",
            a.TrialId,
            handlers.get_adverse_events,
            data=True,
        ),
        Tool(
            "geocode_location",
            "Turn a place name or US ZIP code into coordinates (offline gazetteer). Says which place was "
            "chosen when the name is ambiguous.",
            a.PlaceQuery,
            handlers.geocode_location,
        ),
        Tool(
            "get_dashboard_stats",
            "Headline numbers for a filter, the same ones the Explore page shows: matching trials, "
            "recruiting, sites, countries, planned enrollment, counts by phase and status.",
            a.DashboardQuery,
            handlers.get_dashboard_stats,
        ),
        Tool(
            "save_patient_profile",
            "Save what you have learned about the patient (merged into the saved profile). Call it after "
            "each answer. Set complete=true once diagnosis, age, sex and location are known and the "
            "interview is finished. activity_level fills in the ECOG score automatically.",
            a.ProfileUpdate,
            handlers.save_patient_profile,
            barrier=True,
        ),
        Tool(
            "update_session_phase",
            "Move the conversation to another phase. The new phase's instructions apply from your next "
            "step. Refused (with the reason) when the phase's preconditions are not met.",
            a.PhaseChange,
            handlers.update_session_phase,
            barrier=True,
        ),
        Tool(
            "save_matched_trials",
            "Save eligibility assessments (one entry per trial; repeated calls update by NCT id). Each "
            "criterion quotes one of the trial's own lines as get_eligibility_criteria gave it (or "
            "'Ages: …' / 'Sex: …' for its registry limits) and gets a status and a plain-language version. "
            "Refused when a criterion is not the trial's own line or the verdict does not follow from the "
            "statuses ('eligible' needs every line met and nothing unknown). Only trials returned by a "
            "search or lookup in this session can be saved.",
            a.Matches,
            handlers.save_matched_trials,
            barrier=True,
        ),
        Tool(
            "generate_report",
            "Write the printable report for the trials the patient selected, with your summary, "
            "questions for their doctor and a glossary. The app adds questions grouped by who can answer "
            "them (specialist, radiology, lab, family doctor, trial team) and a reviewer's points per trial.",
            a.ReportDraft,
            handlers.generate_report,
            barrier=True,
        ),
        Tool(
            "emit_widget",
            "Show the patient a set of choices (single or multi select) for one intake question. For "
            "field 'activity_level' the app supplies the options itself. The answer arrives as the "
            "patient's next message.",
            a.Widget,
            handlers.emit_widget,
        ),
        Tool(
            "emit_trial_cards",
            "Show trial cards (title, fit score, verdict, plain summary, nearest site). With "
            "selectable=true the patient can tick the trials they want in their report.",
            a.Cards,
            handlers.emit_trial_cards,
            barrier=True,
        ),
        Tool(
            "emit_status",
            "Show a short progress message at once (e.g. 'Checking trial 3 of 8').",
            a.StatusMessage,
            handlers.emit_status,
        ),
        Tool(
            "emit_partial_filters",
            "Update the dashboard filters with what the patient just told you, so the Explore and Map "
            "pages show their landscape. Pass only the fields that changed.",
            a.FilterChange,
            handlers.emit_partial_filters,
            barrier=True,
        ),
    ]
    return ToolRegistry(tools)
