"""Tool schemas and argument models, compact results and the session tools."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from services.assistant import AssistantSession, build_registry
from services.assistant.arguments import ACTIVITY_LEVELS, ToolSchema
from services.assistant.handlers import condition_matches
from services.assistant.registry import ToolContext, ToolOutcome
from services.errors import DatabaseUnavailable
from tests.memory_backend import TRIALS, MemoryBackend

REGISTRY = build_registry()


def run(
    name: str, args: Any, session: AssistantSession | None = None, backend: MemoryBackend | None = None
) -> tuple[dict[str, Any], ToolOutcome]:
    ctx = ToolContext(session or AssistantSession(), backend or MemoryBackend())
    outcome = REGISTRY.run(name, args, ctx)
    return json.loads(outcome.content), outcome


def ready_session(phase: str = "search") -> AssistantSession:
    session = AssistantSession(phase=phase)
    session.patient_profile = {"diagnosis": "breast cancer", "age": 52, "sex": "female", "location": "Boston, MA", "latitude": 42.36, "longitude": -71.06}  # fmt: skip
    session.flags["intake_complete"] = True
    return session


def test_tools_registry_has_the_fifteen_tools_with_supported_schemas() -> None:
    assert sorted(REGISTRY.tools) == sorted(
        [
            "search_trials", "get_trial_details", "get_eligibility_criteria", "get_trial_locations",
            "get_adverse_events", "geocode_location", "get_dashboard_stats", "save_patient_profile",
            "update_session_phase", "save_matched_trials", "generate_report", "emit_widget",
            "emit_trial_cards", "emit_status", "emit_partial_filters",
        ]
    )  # fmt: skip
    for definition in REGISTRY.definitions(cache=False):
        assert set(definition) == {"name", "description", "input_schema"}
        tool = REGISTRY.tools[definition["name"]]
        # what the model reads is the arguments model's own schema: the two cannot drift
        assert definition["input_schema"] == tool.arguments.model_json_schema(schema_generator=ToolSchema)
        assert definition["input_schema"]["additionalProperties"] is False
    search = REGISTRY.tools["search_trials"].input_schema
    assert search["required"] == ["strategy"]
    assert search["properties"]["sex"] == {"enum": ["female", "male"], "type": "string"}
    assert search["properties"]["limit"]["maximum"] == 15
    assert search["properties"]["phases"]["items"]["enum"][:2] == ["EARLY_PHASE1", "PHASE1"]


MATCH_WITHOUT_PLAIN = {"nct_id": "NCT00000001", "verdict": "eligible", "summary": "s", "unknowns": [],
                      "criteria": [{"type": "inclusion", "criterion": "c", "status": "met"}]}


@pytest.mark.parametrize(
    ("name", "value", "problems"),
    [
        ("emit_status", {"message": "x" * 201},
         ['$.message: string should have at most 200 characters, got "' + "x" * 58 + "…"]),
        ("emit_status", {}, ["$: missing required field 'message'"]),
        ("search_trials", {"strategy": "exact", "limit": True},
         ["$.limit: input should be a valid integer, got true"]),
        ("search_trials", {"strategy": "exact", "limit": 1.5},
         ["$.limit: input should be a valid integer, got 1.5"]),
        ("search_trials", {"strategy": "exact", "age": "52"},
         ['$.age: input should be a valid integer, got "52"']),
        ("search_trials", {"strategy": "near"},
         ['$.strategy: must be one of exact, broader, intervention, wider_radius, phase, other, got "near"']),
        ("search_trials", {"strategy": "exact", "sex": "FEMALE"},
         ["$.sex: input should be 'female' or 'male', got \"FEMALE\""]),
        ("search_trials", {"strategy": "exact", "phases": ["PHASE2", "PHASE9"]},
         ['$.phases[1]: must be one of EARLY_PHASE1, PHASE1, PHASE2, PHASE3, PHASE4, NA, got "PHASE9"']),
        ("emit_trial_cards", {"nct_ids": []},
         ["$.nct_ids: list should have at least 1 item after validation, not 0, got []"]),
        ("save_matched_trials", {"trials": [MATCH_WITHOUT_PLAIN]},
         ["$.trials[0].criteria[0]: missing required field 'plain'"]),
        ("geocode_location", {"place": "Boston", "extra": 1}, ["$: unknown field 'extra' (allowed: place)"]),
    ],
)
def test_tools_bad_arguments_name_the_field(name: str, value: Any, problems: list[str]) -> None:
    result, outcome = run(name, value)
    assert outcome.is_error
    assert result == {"error": f"Invalid arguments for {name}; fix these and call again.",
                      "problems": problems}


def test_tools_search_results_are_compact_and_deduplicated() -> None:
    many = []
    for k in range(20):
        trial = dict(TRIALS[0], nct_id=f"NCT100000{k:02d}", title="Breast cancer study " + "long words " * 20)
        trial["interventions"] = ["Drug A", "Drug B", "Drug C", "Drug D", "Drug E"]
        many.append(trial)
    backend = MemoryBackend(trials=many)
    session = ready_session()

    result, outcome = run("search_trials", {"strategy": "exact", "condition": "breast cancer", "latitude": 42.36, "longitude": -71.06}, session, backend)  # fmt: skip

    assert not outcome.is_error
    assert (result["total_matching"], result["returned"], result["new_this_session"]) == (20, 15, 15)
    first = result["trials"][0]
    assert first["title"] == ("Breast cancer study " + "long words " * 20)[:119].rstrip() + "…"
    assert len(first["title"]) <= 120
    assert (first["interventions"], first["more_interventions"]) == (["Drug A", "Drug B", "Drug C"], 2)
    assert first["nearest_site"] == {"facility": "Harbor Cancer Center", "city": "Boston", "state": "MA", "country": "United States", "distance_miles": 0.7}  # fmt: skip
    assert first["ages"] == "18 Years to no maximum"
    assert "mesh_terms" not in first
    again, _ = run("search_trials", {"strategy": "broader", "condition": "breast"}, session, backend)
    assert (again["new_this_session"], again["unique_candidates_so_far"]) == (0, 15)
    assert session.candidates["NCT10000000"]["strategies"] == ["exact", "broader"]
    assert backend.queries[0].status == ("RECRUITING", "NOT_YET_RECRUITING")
    assert session.seen_nct_ids == sorted(f"NCT100000{k:02d}" for k in range(15))


def test_tools_search_argument_rules_are_explained() -> None:
    cases = {
        "Give a condition, an intervention, or both.": {"strategy": "exact"},
        "Give latitude and longitude together (geocode_location turns a place into both).": {"strategy": "exact", "condition": "x", "latitude": 1.0},
        "radius_miles needs latitude and longitude; call geocode_location for the place first.": {"strategy": "exact", "condition": "x", "radius_miles": 50},
    }  # fmt: skip
    for message, args in cases.items():
        result, outcome = run("search_trials", args)
        assert (outcome.is_error, result) == (True, {"error": message})


def test_tools_condition_check_is_the_condition_model() -> None:
    trial = {"conditions": ["Carcinoma, Non-Small-Cell Lung"], "mesh_terms": [], "title": "A trial"}
    assert condition_matches("non-small cell lung cancer", trial)
    assert condition_matches("NSCLC", {"conditions": ["NSCLC"], "title": ""})
    assert not condition_matches(
        "small cell lung cancer", {"conditions": ["Breast cancer"], "title": "Lung health survey"}
    )
    assert condition_matches("Multiple sclerosis", {"conditions": ["Sclerosis, Multiple"], "title": ""})
    assert condition_matches("MS", {"conditions": ["MS (Multiple Sclerosis)"], "title": ""})
    assert not condition_matches("breast cancer", TRIALS[2])
    # Keywords count, as they do on Explore; titles do not (the search's SQL reads names, MeSH terms, keywords).
    assert condition_matches("breast cancer", dict(TRIALS[2], keywords=["Breast cancer survivors"]))
    assert not condition_matches("hypertension", {"conditions": [], "title": "Hypertension in adults"})
    assert condition_matches("NSCLC", {"conditions": ["Non-small Cell Lung Cancer"]})  # the case the issue saw dropped


def test_tools_locations_are_nearest_first_and_capped() -> None:
    sites = [{"facility": f"Site {k}", "city": "X", "state": "MA", "country": "United States", "status": "RECRUITING", "latitude": 42.0 + k / 10, "longitude": -71.0} for k in range(14)]  # fmt: skip
    backend = MemoryBackend(trials=[dict(TRIALS[0], sites=list(reversed(sites)))])
    session = ready_session("matching")

    result, _ = run("get_trial_locations", {"nct_id": "nct00000001"}, session, backend)

    assert (result["total_sites"], result["measured_from"]) == (14, [42.36, -71.06])
    assert [s["facility"] for s in result["sites"]] == ["Site 4", "Site 3", "Site 5", "Site 2", "Site 6", "Site 1", "Site 7", "Site 0", "Site 8", "Site 9"]  # fmt: skip


def test_tools_a_crashing_tool_is_logged_without_its_message(caplog: pytest.LogCaptureFixture) -> None:
    # The exception's text can quote the tool's arguments, which can be the patient's answers: the log keeps the
    # tool, the exception's type and where it happened, and the model still reads the whole message.
    broken = MemoryBackend(fail_with={"geocode_location": ValueError("no place '12 Elm St, Springfield'")})
    with caplog.at_level(logging.ERROR, logger="services.assistant.registry"):
        result = run("geocode_location", {"place": "12 Elm St, Springfield"}, backend=broken)[0]
    assert result == {"error": "geocode_location failed unexpectedly (ValueError: no place '12 Elm St, Springfield')."}
    assert "geocode_location crashed with ValueError" in caplog.text and "memory_backend.py" in caplog.text
    assert "Elm St" not in caplog.text


def test_tools_unknown_trial_and_backend_failures_become_error_results() -> None:
    assert run("get_trial_details", {"nct_id": "NCT99999999"})[0] == {
        "error": "No trial NCT99999999 in the database. Check the id against your search results."
    }
    assert run("get_eligibility_criteria", {"nct_id": "12345"})[0] == {
        "error": "'12345' is not an NCT id; it must look like NCT followed by 8 digits."
    }
    down = MemoryBackend(fail_with={"get_adverse_events": DatabaseUnavailable("connection refused")})
    assert run("get_adverse_events", {"nct_id": "NCT00000001"}, backend=down)[0] == {
        "error": "get_adverse_events failed: connection refused",
        "hint": "The database is not answering. Wait a few seconds and press Retry.",
    }
    broken = MemoryBackend(fail_with={"geocode_location": KeyError("lat")})
    assert run("geocode_location", {"place": "Boston, MA"}, backend=broken)[0] == {
        "error": "geocode_location failed unexpectedly (KeyError: 'lat')."
    }
    assert run("no_such_tool", {})[0]["error"].startswith(
        "There is no tool named 'no_such_tool'. Available: search_trials,"
    )
    assert run("emit_status", "not an object")[0] == {
        "error": "Invalid arguments for emit_status; fix these and call again.",
        "problems": ["$: must be an object, got str"],
    }


def test_tools_adverse_events_are_summarised() -> None:
    result, _ = run("get_adverse_events", {"nct_id": "NCT00000001"})
    assert result == {
        "nct_id": "NCT00000001",
        "has_results": True,
        "serious": [{"term": "Anaemia", "organ_system": "Blood", "subjects_affected": 12, "subjects_at_risk": 200, "percent": 6.0}],
        "other": [{"term": "Nausea", "organ_system": "Gastrointestinal", "subjects_affected": 120, "subjects_at_risk": 200, "percent": 60.0}],
    }  # fmt: skip
    assert run("get_adverse_events", {"nct_id": "NCT00000002"})[0] == {
        "nct_id": "NCT00000002",
        "has_results": False,
        "note": "This trial has not posted results.",
    }


def test_tools_save_patient_profile_merges_and_checks_completeness() -> None:
    session = AssistantSession()
    level = list(ACTIVITY_LEVELS)[2]

    first, _ = run("save_patient_profile", {"diagnosis": "asthma", "activity_level": level}, session)
    refused, outcome = run("save_patient_profile", {"age": 30, "complete": True}, session)

    assert first == {
        "saved": ["activity_level", "diagnosis", "ecog"],
        "complete": False,
        "still_missing": ["age", "sex", "location"],
    }
    assert outcome.is_error and refused["error"].startswith(
        "Saved, but the profile cannot be marked complete: still missing sex, location."
    )
    assert session.patient_profile == {"diagnosis": "asthma", "activity_level": level, "ecog": 2, "age": 30}
    assert session.intake_answers == session.patient_profile
    done, _ = run(
        "save_patient_profile", {"sex": "female", "location": "Lompoc, California", "complete": True}, session
    )
    assert (done["complete"], session.flags["intake_complete"]) == (True, True)


def test_tools_phase_changes_check_preconditions() -> None:
    session = AssistantSession()
    steps = [
        (
            "search",
            "Cannot move to search yet: the patient profile is not complete; save it with save_patient_profile(complete=true) first.",
        ),
    ]
    for phase, message in steps:
        assert run("update_session_phase", {"phase": phase}, session)[0] == {"error": message}
    session = ready_session("search")
    assert run("update_session_phase", {"phase": "matching"}, session)[0] == {
        "error": "Cannot move to matching yet: no trials have been found yet; run search_trials first."
    }
    run("search_trials", {"strategy": "exact", "condition": "breast cancer"}, session)
    result, outcome = run("update_session_phase", {"phase": "matching"}, session)
    assert result == {"phase": "matching", "previous": "search", "changed": True}
    assert outcome.events == ({"type": "phase", "phase": "matching", "previous": "search"},)
    assert (session.phase, session.flags["search_complete"]) == ("matching", True)
    assert run("update_session_phase", {"phase": "followup"}, session)[0] == {
        "error": "Cannot move to followup yet: there is no report yet; call generate_report first."
    }


def match(nct_id: str, verdict: str, statuses: list[str], score: int = 50) -> dict[str, Any]:
    """A match quoting the trial's own lines (save_matched_trials refuses others); an eligible one judges
    them all met and leaves nothing unknown, as an eligible verdict must."""
    trial = next((t for t in TRIALS if t["nct_id"] == nct_id), None)
    lines = [*trial["inclusion"], *trial["exclusion"]] if trial else ["c0"]
    if verdict == "eligible" and set(statuses) == {"met"}:
        statuses = ["met"] * len(lines)
    return {
        "nct_id": nct_id,
        "fit_score": score,
        "verdict": verdict,
        "summary": "A plain summary.",
        "criteria": [
            {"type": "inclusion", "criterion": lines[k % len(lines)], "status": s, "plain": "p"}
            for k, s in enumerate(statuses)
        ],
        "unknowns": [] if verdict == "eligible"
        else [{"kind": "record", "text": "Bring your pathology report"}],
    }


def test_tools_save_matched_trials_checks_ids_and_verdicts() -> None:
    session = ready_session("matching")
    session.seen_nct_ids = ["NCT00000001", "NCT00000002"]
    session.candidates = {
        "NCT00000001": {
            "nct_id": "NCT00000001",
            "title": "Olaparib",
            "status": "RECRUITING",
            "phases": ["PHASE3"],
        }
    }

    refused, outcome = run(
        "save_matched_trials",
        {"trials": [match("NCT00000001", "eligible", ["met", "not_met"]), match("NCT00000009", "uncertain", ["met"]), match("NCT00000002", "excluded", ["met"])]},
        session,
    )  # fmt: skip
    assert outcome.is_error and session.matched_trials == []
    assert refused["error"] == (
        "Nothing saved; fix these and send the whole list again: "
        "trials[0]: verdict 'eligible' but a criterion is 'not_met'; use 'excluded' or fix the criterion. | "
        "trials[1]: NCT00000009 did not come from any search or lookup in this session. | "
        "trials[2]: verdict 'excluded' needs at least one criterion marked 'not_met'."
    )
    saved, _ = run("save_matched_trials", {"trials": [match("NCT00000002", "excluded", ["not_met"], 20), match("NCT00000001", "eligible", ["met"], 85)]}, session)  # fmt: skip
    # The app computes the fit from the statuses (the model's 20 and 85 are ignored): eligible 1/1 met -> 100,
    # excluded with nothing in favour -> 0. No travel limit was given, so both count as within reach.
    assert saved["saved"] == ["NCT00000002", "NCT00000001"] and saved["total_matched"] == 2
    assert saved["ranking"] == [["NCT00000001", 100, "eligible", "promising", True],
                                ["NCT00000002", 0, "excluded", "unlikely", True]]
    assert session.matched("NCT00000001")["title"] == "Olaparib"  # type: ignore[index]
    updated, _ = run(
        "save_matched_trials",
        {"trials": [match("NCT00000002", "uncertain", ["needs_discussion"], 90)]},
        session,
    )
    # An uncertain trial with nothing judged no longer outranks an eligible one with a made-up 90.
    assert updated["ranking"] == [["NCT00000001", 100, "eligible", "promising", True],
                                  ["NCT00000002", 20, "uncertain", "needs_information", True]]


def test_tools_save_matched_trials_refuses_eligible_with_nothing_judged() -> None:
    session = ready_session("matching")
    session.seen_nct_ids = ["NCT00000001"]
    session.candidates = {"NCT00000001": {"nct_id": "NCT00000001", "title": "T", "status": "RECRUITING",
                                          "phases": [], "criteria_text": "missing from this copy"}}
    refused, outcome = run("save_matched_trials", {"trials": [match("NCT00000001", "eligible", ["not_enough_information"])]}, session)  # fmt: skip
    assert outcome.is_error and session.matched_trials == []
    assert refused["error"] == (
        "Nothing saved; fix these and send the whole list again: trials[0]: verdict 'eligible' with no criterion "
        "judged (none is 'met'); a trial can only be called eligible when its criteria were checked. Use "
        "'uncertain' (its criteria text is missing from this copy)."
    )
    saved, _ = run("save_matched_trials", {"trials": [match("NCT00000001", "uncertain", ["met", "met", "not_enough_information"], 99)]}, session)  # fmt: skip
    # Criteria text missing from our copy: the fit stays at the bottom of the "needs information" band.
    assert saved["ranking"] == [["NCT00000001", 20, "uncertain", "needs_information", True]]
    assert session.matched("NCT00000001")["criteria_text"] == "missing from this copy"  # type: ignore[index]


def test_tools_save_matched_trials_refuses_uncertain_with_a_criterion_not_met() -> None:
    """'uncertain' means nothing is against the patient (the matching skill's own rule): with a criterion not_met it
    scored 20 + 80 x 9/10 = 92, 'Good match so far', which the report's glossary explains as 'none against you'."""
    session = ready_session("matching")
    session.seen_nct_ids = ["NCT00000001"]
    refused, outcome = run("save_matched_trials", {"trials": [match("NCT00000001", "uncertain", ["met"] * 9 + ["not_met"])]}, session)  # fmt: skip
    assert outcome.is_error and session.matched_trials == []
    assert refused["error"] == (
        "Nothing saved; fix these and send the whole list again: trials[0]: verdict 'uncertain' but a criterion is "
        "'not_met'; use 'excluded' or fix the criterion."
    )
    saved, _ = run("save_matched_trials", {"trials": [match("NCT00000001", "excluded", ["met"] * 9 + ["not_met"])]}, session)  # fmt: skip
    assert saved["ranking"] == [["NCT00000001", 17, "excluded", "unlikely", True]]


def test_tools_save_matched_trials_ranks_reachable_trials_first() -> None:
    session = ready_session("matching")
    session.patient_profile["travel_radius_miles"] = 200
    session.seen_nct_ids = ["NCT00000001", "NCT00000002", "NCT00000003"]
    session.candidates = {
        "NCT00000001": {"nct_id": "NCT00000001", "nearest_site": {"distance_miles": 1455.0}},
        "NCT00000002": {"nct_id": "NCT00000002", "nearest_site": {"distance_miles": 12.5}},
        "NCT00000003": {"nct_id": "NCT00000003", "nearest_site": {"distance_miles": 3.0}},
    }
    saved, _ = run("save_matched_trials", {"trials": [
        match("NCT00000001", "uncertain", ["met", "met", "met", "not_enough_information"]),  # fit 80, far away
        match("NCT00000002", "uncertain", ["met", "not_enough_information", "not_enough_information"]),  # fit 47, near
        match("NCT00000003", "excluded", ["met", "not_met"]),  # nearest of all, but ruled out
    ]}, session)  # fmt: skip
    assert saved["ranking"] == [["NCT00000002", 47, "uncertain", "needs_information", True],
                                ["NCT00000001", 80, "uncertain", "promising", False],
                                ["NCT00000003", 10, "excluded", "unlikely", True]]
    far = session.matched("NCT00000001") or {}
    assert far["distance_note"] == ("Beyond your travel limit: the nearest site is about 1,455 miles away; you said "
                                    "you can travel 200 miles.")
    cards, outcome = run("emit_trial_cards", {"nct_ids": ["NCT00000001"]}, session)
    assert outcome.events[0]["trials"][0]["distance_note"] == far["distance_note"]


def test_tools_missing_criteria_text_is_said_in_results() -> None:
    backend = MemoryBackend()
    backend.trials[0]["inclusion"], backend.trials[0]["exclusion"] = [], []
    nct_id = backend.trials[0]["nct_id"]
    result, _ = run("get_eligibility_criteria", {"nct_id": nct_id}, backend=backend)
    assert result["criteria_text"] == "missing from this copy"
    assert "never call the trial 'eligible'" in result["note"]
    found, _ = run("search_trials", {"strategy": "exact", "condition": backend.trials[0]["conditions"][0]},
                   ready_session(), backend)
    assert next(t for t in found["trials"] if t["nct_id"] == nct_id)["criteria_text"] == "missing from this copy"


def test_tools_stale_recruiting_status_is_marked_on_search_results_and_cards() -> None:
    import datetime as dt

    backend = MemoryBackend()
    trial = backend.trials[0]
    trial.update(status="RECRUITING", primary_completion_date="2023-05-01", last_update_date="2023-01-10")
    session = ready_session()
    ctx = ToolContext(session, backend, today=dt.date(2026, 3, 1))
    found = json.loads(REGISTRY.run("search_trials", {"strategy": "exact", "condition": trial["conditions"][0]},
                                    ctx).content)
    hit = next(t for t in found["trials"] if t["nct_id"] == trial["nct_id"])
    assert hit["status_note"] == (
        "Status may be out of date — last updated January 10, 2023; its primary completion date (May 2023) has "
        "passed and it has not been updated for more than two years. Check ClinicalTrials.gov or ask the study team.")
    cards = REGISTRY.run("emit_trial_cards", {"nct_ids": [trial["nct_id"]]}, ctx)
    assert cards.events[0]["trials"][0]["status_note"] == hit["status_note"]
    # Judged on an earlier day, the same record is fresh.
    early = ToolContext(ready_session(), backend, today=dt.date(2023, 2, 1))
    again = json.loads(REGISTRY.run("search_trials", {"strategy": "exact", "condition": trial["conditions"][0]},
                                    early).content)
    assert "status_note" not in next(t for t in again["trials"] if t["nct_id"] == trial["nct_id"])


def test_tools_a_card_carries_our_copys_last_update_date_for_the_live_check() -> None:
    # The page's "check the status now" compares the live record with our copy's last update; the card never had
    # that date (card_view read a key nothing set), so the answer could not say when our copy was last updated.
    from services.assistant.view_model import card_view

    backend = MemoryBackend()
    trial = backend.trials[0]
    trial.update(last_update_date="2024-06-03")
    ctx = ToolContext(ready_session(), backend)
    REGISTRY.run("search_trials", {"strategy": "exact", "condition": trial["conditions"][0]}, ctx)
    cards = REGISTRY.run("emit_trial_cards", {"nct_ids": [trial["nct_id"]]}, ctx)
    assert card_view(cards.events[0]["trials"][0])["last_update"] == "2024-06-03"


def test_tools_trial_cards_widgets_and_filters_queue_events() -> None:
    session = ready_session("matching")
    session.seen_nct_ids = ["NCT00000001"]
    session.candidates = {"NCT00000001": {"nct_id": "NCT00000001", "title": "Olaparib", "status": "RECRUITING", "phases": ["PHASE3"], "nearest_site": None}}  # fmt: skip
    run(
        "save_matched_trials",
        {"trials": [match("NCT00000001", "uncertain", ["met", "not_enough_information"], 64)]},
        session,
    )

    cards, outcome = run("emit_trial_cards", {"nct_ids": ["NCT00000001"], "selectable": True}, session)
    assert cards == {"shown": ["NCT00000001"], "selectable": True}
    assert outcome.events == (
        {
            "type": "trial_cards",
            "selectable": True,
            "trials": [{"nct_id": "NCT00000001", "title": "Olaparib", "status": "RECRUITING", "phases": ["PHASE3"], "fit_score": 60, "verdict": "uncertain", "summary": "A plain summary.", "nearest_site": None, "url": "https://clinicaltrials.gov/study/NCT00000001",
                            "fit_band": "promising", "fit_explanation": "1 of the 2 criteria is in your favour; 1 could not be checked yet.", "distance_note": "", "within_reach": True, "status_note": None, "criteria_text": None, "last_update_date": None}],
        },
    )  # fmt: skip
    assert run("emit_trial_cards", {"nct_ids": ["NCT00000005"]}, session)[0] == {
        "error": "No search result or saved match for NCT00000005."
    }

    widget, outcome = run("emit_widget", {"field": "activity_level", "question": "How active are you?", "widget_type": "single_select", "options": ["ignored", "too"]}, session)  # fmt: skip
    assert widget["widget_id"] == "w1" and outcome.events[0]["options"] == list(ACTIVITY_LEVELS)
    assert run("emit_widget", {"field": "sex", "question": "Sex?", "widget_type": "single_select", "options": ["Female"]}, session)[0] == {"error": "A widget needs at least two options."}  # fmt: skip

    _, first = run(
        "emit_partial_filters", {"condition": "breast cancer", "near": "Boston, MA", "radius": 50}, session
    )
    result, second = run("emit_partial_filters", {"radius": 100, "radius_unit": "km"}, session)
    assert result == {
        "filters": {"condition": "breast cancer", "near": "Boston, MA", "radius": 100, "radius_unit": "km"}
    }
    assert second.events == ({"type": "filters", "filters": result["filters"]},)
    assert run("emit_partial_filters", {}, session)[0] == {"error": "Pass at least one filter value."}


def test_tools_generate_report_needs_a_selection_and_stores_html() -> None:
    session = ready_session("report")
    session.seen_nct_ids = ["NCT00000001"]
    run("save_matched_trials", {"trials": [match("NCT00000001", "eligible", ["met"], 88)]}, session)  # the app scores it 100
    args = {"summary": "You asked about breast cancer trials.", "questions_for_doctor": ["Is my BRCA test recent enough?"], "glossary": [{"term": "PARP inhibitor", "meaning": "A drug that stops cancer cells repairing DNA."}]}  # fmt: skip
    backend = MemoryBackend()

    assert run("generate_report", args, session, backend)[0] == {
        "error": "The patient has not chosen any trials yet. Show the trial cards and wait for their choice."
    }
    session.selected_nct_ids = ["NCT00000001"]
    result, outcome = run("generate_report", args, session, backend)

    html = "<html><body><p>You asked about breast cancer trials.</p><ul><li>NCT00000001: fit 100</li></ul></body></html>"
    assert result == {"report": "ready", "trials": ["NCT00000001"], "characters": len(html)}
    assert (session.report_html, session.flags["report_complete"]) == (html, True)
    assert outcome.events == ({"type": "report_ready", "trials": ["NCT00000001"]},)
    request = backend.reports[0]
    assert (request.session_id, request.questions_for_doctor, request.patient_profile["age"]) == (
        session.id,
        ("Is my BRCA test recent enough?",),
        52,
    )


def test_tools_generate_report_refuses_text_citing_trials_not_looked_up() -> None:
    """The report prints the model's summary, questions and glossary as they are: an NCT id in them that no search or
    lookup returned (a misremembered or invented trial) is refused, like one in save_matched_trials."""
    session = ready_session("report")
    session.seen_nct_ids = ["NCT00000001", "NCT00000002"]
    run("save_matched_trials", {"trials": [match("NCT00000001", "eligible", ["met"], 88)]}, session)
    session.selected_nct_ids = ["NCT00000001"]
    base = {"summary": "NCT00000001 fits; NCT00000002 did not.", "questions_for_doctor": ["Is NCT00000001 safe?"],
            "glossary": [{"term": "PARP inhibitor", "meaning": "A drug."}]}
    bad = [{"summary": "Also look at NCT09999999."}, {"questions_for_doctor": ["Is NCT012345678 better?"]},
           {"glossary": [{"term": "NCT number", "meaning": "e.g. NCT09999999"}]},
           {"question_groups": [{"topic": "Other trials", "questions": ["What about NCT09999999?"]}]}]
    for change in bad:
        backend = MemoryBackend()
        result = run("generate_report", {**base, **change}, session, backend)[0]
        assert "did not come from any search or lookup" in result.get("error", ""), change
        assert backend.reports == [] and session.report_html is None
    assert run("generate_report", base, session, MemoryBackend())[0]["report"] == "ready"


def test_tools_trial_details_cap_the_contact_list_and_say_how_many_were_left_out() -> None:
    """A full-AACT trial can list hundreds of site contacts; passed whole they overflowed the 24,000-character result
    cap and the model got cut JSON. The first ones (central contacts come first) are shown with a count of the rest."""
    contacts = [{"kind": "central", "name": "Study Desk", "email": "desk@example.org"}] + [
        {"kind": "site", "role": "Contact", "name": f"Site Coordinator {i}", "email": f"coordinator{i}@example.org",
         "phone": "+1 555 0100", "facility": f"Regional Cancer Centre number {i}", "city": "Springfield"}
        for i in range(300)]

    class WithContacts(MemoryBackend):
        def get_trial_details(self, nct_id: str) -> Any:
            found = super().get_trial_details(nct_id)
            return None if found is None else dict(found, contacts=contacts)

    backend = WithContacts()
    result, _ = run("get_trial_details", {"nct_id": backend.trials[0]["nct_id"]}, backend=backend)
    assert result["contacts"] == contacts[:10] and result["more_contacts"] == 291
    few, _ = run("get_trial_details", {"nct_id": backend.trials[0]["nct_id"]}, backend=MemoryBackend())
    assert "contacts" not in few and "more_contacts" not in few


def test_tools_eligibility_says_how_many_criteria_lines_were_left_out() -> None:
    """The tool shows the model at most 40 lines of each kind; a longer list says how many more there are (as a
    trial's interventions do), so the model does not judge the trial on a list it has not seen whole."""
    backend = MemoryBackend()
    nct_id = backend.trials[0]["nct_id"]
    backend.trials[0] = dict(backend.trials[0], inclusion=[f"Inclusion {i}" for i in range(45)],
                             exclusion=[f"Exclusion {i}" for i in range(40)])
    result, _ = run("get_eligibility_criteria", {"nct_id": nct_id}, backend=backend)
    assert (len(result["inclusion"]), result["more_inclusion"]) == (40, 5)
    assert len(result["exclusion"]) == 40 and "more_exclusion" not in result


def test_tools_save_matched_trials_refuses_a_trial_text_naming_an_id_never_looked_up() -> None:
    """The report and the cards print a match's summary, plain wording, reasons, unknowns and what-to-expect as
    they are; generate_report refused an NCT id from no lookup in its own texts, but one in a saved match went
    straight into the report ('Like NCT99999999, this trial …'). An id quoted from the trial's own criteria is kept."""
    session = ready_session("matching")
    session.seen_nct_ids = ["NCT00000001", "NCT00000002"]
    invented = dict(match("NCT00000001", "uncertain", ["met"]), summary="Like NCT99999999, it tests a pill.")
    invented["unknowns"] = [{"kind": "question", "text": "Ask about NCT00000002 and NCT12345678."}]
    refused, outcome = run("save_matched_trials", {"trials": [invented]}, session)
    assert outcome.is_error and session.matched_trials == []
    assert refused["error"] == (
        "Nothing saved; fix these and send the whole list again: trials[0]: its texts mention NCT99999999, "
        "NCT12345678, which did not come from any search or lookup in this session; look them up first or leave "
        "them out.")
    backend = MemoryBackend()  # a trial whose own exclusion line names another trial
    trial = next(t for t in backend.trials if t["nct_id"] == "NCT00000001")
    trial["exclusion"] = [*trial["exclusion"], "No prior enrolment in NCT01234567"]
    quoted = match("NCT00000001", "uncertain", ["met"])
    quoted["criteria"][0].update(criterion="No prior enrolment in NCT01234567", plain="You were not in NCT01234567.")
    saved, _ = run("save_matched_trials", {"trials": [quoted]}, session, backend)
    assert saved["saved"] == ["NCT00000001"]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_tools_refuse_a_number_that_is_not_finite(bad: float) -> None:
    """Python reads NaN and Infinity in a tool call's JSON; NaN passed every minimum and maximum, so a travel limit
    of NaN miles was saved (and 'Up to NaN miles' or a crash on rounding followed), and Infinity passed a schema
    without a maximum. A number must now be finite."""
    session = ready_session("intake")
    result, outcome = run("save_patient_profile", {"travel_radius_miles": bad}, session)
    assert outcome.is_error and "travel_radius_miles" not in session.patient_profile
    got = json.dumps(bad)
    assert result["problems"] == [f"$.travel_radius_miles: input should be a finite number, got {got}"]
