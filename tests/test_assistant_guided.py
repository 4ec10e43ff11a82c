"""Guided mode (no API key): the form, search strategies, rule-based matching, selection and the report."""

from __future__ import annotations

import re
from typing import Any

import pytest

from services.assistant import AssistantSession
from services.assistant.backend import DatabaseBackend
from services.assistant.guided import (
    ACTIVITY_LEVELS,
    GuidedAssistant,
    GuidedError,
    IntakeForm,
    broader_condition,
    guided_fit,
    split_items,
)
from services.assistant.session import NCT_RE
from services.eligibility.labels import Label
from services.eligibility.patient import PatientProfile
from services.eligibility.scoring import CriterionResult
from tests.memory_backend import MemoryBackend

LIGHT_WORK = list(ACTIVITY_LEVELS)[1]


def _diabetes_form(**changes: Any) -> IntakeForm:
    values: dict[str, Any] = {"diagnosis": "type 2 diabetes", "age": 55, "sex": "female", "location": "Houston, TX",
                              "travel_radius_miles": 100.0, "activity_level": LIGHT_WORK, "treatments": ("metformin",)}
    values.update(changes)
    return IntakeForm(**values)


def test_assistant_guided_form_lists_every_problem() -> None:
    form = IntakeForm(diagnosis=" ", age=None, sex=None, location="", travel_radius_miles=0.5,
                      activity_level="sometimes tired", trial_types=("magic",), preferred_phases=("PHASE9",))
    assert form.problems() == [
        "Please enter the diagnosis (the condition you are looking for trials for).",
        "Please enter an age between 0 and 120.",
        "Please choose female or male (trials often limit who can join by sex).",
        "Please enter where you live: a city with its state or country, or a US ZIP code.",
        "The travel distance must be between 1 and 12,500 miles.",
        "Please choose one of the offered activity levels.",
        "Unknown kinds of treatment: magic.",
        "Unknown trial phases: PHASE9.",
    ]
    assert _diabetes_form().problems() == []


def test_assistant_guided_split_items() -> None:
    assert split_items(" EGFR negative, PD-L1 50% ;\nALK negative,, EGFR negative ") == (
        "EGFR negative", "PD-L1 50%", "ALK negative")
    assert split_items(None) == ()


@pytest.mark.parametrize(("diagnosis", "broader"), [
    ("non-small cell lung cancer", "lung cancer"),
    ("type 2 diabetes", None),
    ("Type 2 diabetes mellitus", None),
    ("triple negative breast cancer", "breast cancer"),
    ("asthma", None),
    ("NSCLC", None),
])
def test_assistant_guided_broader_condition(diagnosis: str, broader: str | None) -> None:
    assert broader_condition(diagnosis) == broader


def test_assistant_guided_fit_caps_and_penalties() -> None:
    checked = [CriterionResult("inclusion", Label.MET, "Age 18 years or older"),
               CriterionResult("exclusion", Label.MET, "Type 1 diabetes"),
               CriterionResult("inclusion", Label.NOT_ENOUGH_INFO, "HbA1c 7-10%")]
    assert guided_fit(checked, missing_text=False, too_far=False) == (
        50, "1 of the 2 criteria we could check are in your favour. 1 other criteria could not be checked and do "
            "not count.")
    assert guided_fit(checked[:1], missing_text=True, too_far=True) == (
        30, "Only the age and sex limits could be checked (the full criteria are not in our copy of the registry), "
            "so the fit is at most 50. The nearest site is farther than you want to travel.")


def test_assistant_guided_judge_maps_rule_labels_to_pass_statuses() -> None:
    patient = PatientProfile(age_years=55, sex="female", conditions=("type 2 diabetes",), ecog=1)
    info = {"min_age": "18 Years", "max_age": "40 Years", "sex": "ALL", "healthy_volunteers": False,
            "inclusion": ["Diagnosis of type 2 diabetes", "HbA1c between 7% and 10%"],
            "exclusion": ["Type 1 diabetes", "ECOG 3 or worse"]}

    results, criteria = GuidedAssistant.judge(info, patient)

    assert [(c["type"], c["criterion"], c["status"]) for c in criteria] == [
        ("inclusion", "Sex: any", "met"),
        ("inclusion", "Age 18 years to 40 years", "not_met"),
        ("inclusion", "Diagnosis of type 2 diabetes", "met"),
        ("inclusion", "HbA1c between 7% and 10%", "not_enough_information"),
        ("exclusion", "Type 1 diabetes", "met"),
        ("exclusion", "ECOG 3 or worse", "met"),
    ]
    assert [r.label for r in results] == [Label.MET, Label.NOT_MET, Label.MET, Label.NOT_ENOUGH_INFO,
                                          Label.NOT_MET, Label.NOT_MET]


def test_assistant_guided_whole_flow_on_memory_backend() -> None:
    backend = MemoryBackend()
    statuses: list[str] = []
    guide = GuidedAssistant(backend, on_status=statuses.append)
    session = AssistantSession()
    form = IntakeForm(diagnosis="breast cancer", age=52, sex="female", location="Boston, MA", travel_radius_miles=50,
                      biomarkers=("BRCA1",), activity_level=list(ACTIVITY_LEVELS)[0], treatments=("surgery",))

    intake = guide.submit_intake(session, form)
    search = guide.run_search(session)
    matching = guide.run_matching(session)

    assert intake.events == [
        {"type": "filters", "filters": {"condition": "breast cancer", "age": 52, "sex": "FEMALE", "near": "Boston, MA",
                                        "radius": 50, "radius_unit": "mi"}},
        {"type": "phase", "phase": "search", "previous": "intake"},
    ]
    assert session.patient_profile == {
        "diagnosis": "breast cancer", "age": 52, "sex": "female", "location": "Boston, MA", "travel_radius_miles": 50,
        "biomarkers": ["BRCA1"], "treatments": ["surgery"], "activity_level": list(ACTIVITY_LEVELS)[0], "ecog": 0,
        "latitude": 42.3601, "longitude": -71.0589,
    }
    assert [(q.condition, q.radius_miles, q.age_years, q.sex) for q in backend.queries] == [
        ("breast cancer", 50, 52, "FEMALE"), ("breast cancer", 250.0, 52, "FEMALE"), ("breast cancer", None, 52, "FEMALE"),
    ]
    assert search.events == [{"type": "phase", "phase": "matching", "previous": "search"}]
    assert {k: v["strategies"] for k, v in session.candidates.items()} == {
        "NCT00000001": ["exact", "wider_radius"], "NCT00000002": ["exact", "wider_radius"]}
    assert [(m["nct_id"], m["fit_score"], m["verdict"]) for m in session.matched_trials] == [
        ("NCT00000001", 100, "uncertain"), ("NCT00000002", 100, "uncertain")]
    first = session.matched("NCT00000001") or {}
    assert [(c["criterion"], c["status"]) for c in first["criteria"]] == [
        ("Sex: any", "met"), ("Age 18 years or older", "met"), ("Age 18 or older", "met"),
        ("Confirmed BRCA1 or BRCA2 mutation", "met"), ("ECOG 0-1", "met"), ("Prior PARP inhibitor", "not_enough_information")]
    assert first["nearest_site"] == "Harbor Cancer Center, Boston, MA, United States — about 0.7 miles away"
    assert "nausea (60%), anaemia (6%)" in first["summary"]
    assert [e["type"] for e in matching.events] == ["trial_cards", "phase"]
    assert [c["nct_id"] for c in matching.events[0]["trials"]] == ["NCT00000001", "NCT00000002"]
    assert statuses[:2] == ["Boston, MA", "Search 1 of 1: exact (breast cancer)"]
    assert statuses[-2:] == ["Checking trial 1 of 2: NCT00000001", "Checking trial 2 of 2: NCT00000002"]

    with pytest.raises(GuidedError, match="not among the assessed trials: NCT00000003"):
        guide.select(session, ["NCT00000003"])
    guide.select(session, ["nct00000002"])
    report = guide.make_report(session)

    assert [r.trials for r in backend.reports] == [({**(session.matched("NCT00000002") or {})},)]
    assert backend.reports[0].questions_for_doctor[-1] == (
        "Given my treatment so far, would joining NCT00000002 be a reasonable option for me?")
    assert [e["type"] for e in report.events] == ["report_ready", "phase"]
    assert (session.phase, session.flags) == ("followup", dict.fromkeys(session.flags, True))
    assert [e.role for e in session.chat_log()] == ["user", "assistant"] * 5


def test_assistant_guided_unknown_place_is_refused() -> None:
    session = AssistantSession()
    with pytest.raises(GuidedError, match="Could not find the place “Atlantis”"):
        GuidedAssistant(MemoryBackend()).submit_intake(session, _diabetes_form(location="Atlantis"))
    assert (session.phase, session.patient_profile) == ("intake", {})


def test_assistant_guided_bad_form_is_refused_with_every_reason() -> None:
    with pytest.raises(GuidedError) as caught:
        GuidedAssistant(MemoryBackend()).submit_intake(AssistantSession(), _diabetes_form(age=None, sex="x"))
    assert str(caught.value) == ("Please enter an age between 0 and 120. Please choose female or male (trials often "
                                 "limit who can join by sex).")


def test_assistant_guided_diabetes_houston_end_to_end(db: Any) -> None:
    backend = DatabaseBackend(db)
    guide = GuidedAssistant(backend)
    session = AssistantSession()
    events: list[dict[str, Any]] = []

    for step in (lambda: guide.submit_intake(session, _diabetes_form()), lambda: guide.run_search(session),
                 lambda: guide.run_matching(session)):
        events += step().events
    chosen = [m["nct_id"] for m in session.matched_trials[:2]]
    events += guide.select(session, chosen).events
    events += guide.make_report(session).events

    assert [e["phase"] for e in events if e["type"] == "phase"] == ["search", "matching", "selection", "report",
                                                                    "followup"]
    assert next(e for e in events if e["type"] == "filters")["filters"] == {
        "condition": "type 2 diabetes", "age": 55, "sex": "FEMALE", "near": "Houston, TX", "radius": 100.0,
        "radius_unit": "mi"}
    assert len(session.candidates) >= 5
    assert all(c["strategies"] for c in session.candidates.values())
    for trial in session.candidates.values():
        text = " ".join([trial["title"], *trial["conditions"]]).lower()
        assert "diabet" in text or "glyc" in text or "hba1c" in text, trial
    assert len(session.matched_trials) == min(12, len(session.candidates))
    assert all(0 <= m["fit_score"] <= 100 for m in session.matched_trials)
    html = session.report_html or ""
    assert set(NCT_RE.findall(html)) == set(chosen)
    assert "Questions for your doctor" in html and "type 2 diabetes" in html
    assert re.search(r"<title>[^<]+</title>", html)
