"""Guided mode (no API key): the form, search strategies, rule-based matching, selection and the report."""

from __future__ import annotations

import re
from typing import Any

import pytest

from services.assistant import AssistantSession
from services.assistant.backend import DatabaseBackend
from services.assistant.guided import (
    ACTIVITY_LEVELS,
    MAX_MATCHED,
    GuidedAssistant,
    GuidedError,
    IntakeForm,
    check_order,
    split_items,
)
from services.assistant.handlers import condition_matches, search_facts, trial_card
from services.eligibility.labels import Label
from services.eligibility.patient import PatientProfile
from services.matching.form import broader_names, form_conditions
from services.matching.relevance import Relevance
from services.trials import CRITERIA_MISSING, NCT_RE, search_sentence
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
    ("non-small cell lung cancer", ["Carcinoma, Bronchogenic", "Bronchial Neoplasms", "Lung Neoplasms",
                                    "Bronchial Diseases", "Lung Diseases", "Respiratory Tract Neoplasms",
                                    "Respiratory Tract Diseases", "Thoracic Neoplasms", "Neoplasms"]),
    ("type 2 diabetes", ["Diabetes Mellitus", "Endocrine System Diseases", "Glucose Metabolism Disorders",
                         "Metabolic Diseases", "Nutritional and Metabolic Diseases"]),
    ("Type 2 diabetes mellitus", ["Diabetes Mellitus", "Endocrine System Diseases",
                                  "Glucose Metabolism Disorders", "Metabolic Diseases",
                                  "Nutritional and Metabolic Diseases"]),
    ("triple negative breast cancer", ["Breast Neoplasms", "Breast Diseases", "Neoplasms", "Skin Diseases",
                                       "Skin and Connective Tissue Diseases"]),
    ("heart failure with reduced ejection fraction", ["Heart Failure", "Heart Diseases",
                                                      "Cardiovascular Diseases"]),
    ("breast cancer", ["Breast Diseases", "Neoplasms", "Skin Diseases",
                       "Skin and Connective Tissue Diseases"]),
    ("ejection fraction", []),  # no disease named: no broader search, never a word cut from the text
])
def test_assistant_guided_broader_search_goes_up_the_mesh_tree_a_level_at_a_time(diagnosis: str, broader: list[str]) -> None:
    assert broader_names(form_conditions(diagnosis).diagnosis.headings) == broader


def test_assistant_guided_judge_maps_rule_labels_to_pass_statuses() -> None:
    patient = PatientProfile(age=55, sex="female", conditions=("type 2 diabetes",), ecog=1)
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
        {"type": "filters", "filters": {"condition": "breast cancer", "age": 52, "sex": "female",
                                        "near": "Boston, MA", "radius": 50, "radius_unit": "mi"}},
        {"type": "phase", "phase": "search", "previous": "intake"},
    ]
    assert session.patient_profile == {
        "diagnosis": "breast cancer", "age": 52, "sex": "female", "location": "Boston, MA", "travel_radius_miles": 50,
        "biomarkers": ["BRCA1"], "treatments": ["surgery"], "activity_level": list(ACTIVITY_LEVELS)[0], "ecog": 0,
        "latitude": 42.3601, "longitude": -71.0589,
    }
    assert [(q.condition, q.radius, q.age, q.sex, q.near) for q in backend.queries] == [
        ("breast cancer", 50, 52, "FEMALE", "42.3601, -71.0589"),
        # up the MeSH tree a level at a time to the category tops (Neoplasms by Site walked through)
        *[(name, 50, 52, "FEMALE", "42.3601, -71.0589")
          for name in ("Breast Diseases", "Neoplasms", "Skin Diseases",
                       "Skin and Connective Tissue Diseases")],
        ("breast cancer", 12_500, 52, "FEMALE", "42.3601, -71.0589"),
    ]
    assert search.events == [{"type": "phase", "phase": "matching", "previous": "search"}]
    assert {k: v["strategies"] for k, v in session.candidates.items()} == {
        "NCT00000001": ["exact", "broader", "wider_radius"],
        "NCT00000002": ["exact", "broader", "wider_radius"],
        "NCT00000003": ["broader"]}  # its keyword "cancer survivors" is under Neoplasms; its condition is not
    assert [(m["nct_id"], m["fit_score"], m["verdict"]) for m in session.matched_trials] == [
        ("NCT00000001", 87, "uncertain"), ("NCT00000002", 68, "uncertain"),  # 20 + 80 x 5/6 and 20 + 80 x 3/5
        ("NCT00000003", None, "not_relevant")]
    first = session.matched("NCT00000001") or {}
    assert [(c["criterion"], c["status"]) for c in first["criteria"]] == [
        ("Sex: any", "met"), ("Age 18 years or older", "met"), ("Age 18 or older", "met"),
        ("Confirmed BRCA1 or BRCA2 mutation", "met"), ("ECOG 0-1", "met"), ("Prior PARP inhibitor", "not_enough_information")]
    assert first["nearest_site"] == "Harbor Cancer Center, Boston, MA, United States — less than a mile away"
    assert "nausea (60%), anaemia (6%)" in first["summary"]
    assert [e["type"] for e in matching.events] == ["trial_cards", "phase"]
    cards = [c["nct_id"] for c in matching.events[0]["trials"]]
    assert cards == ["NCT00000001", "NCT00000002", "NCT00000003"]
    assert statuses[:2] == ["Boston, MA", "Search 1 of 5: exact (breast cancer)"]  # then Breast Diseases …
    assert statuses[-3:] == ["Checking trial 1 of 3: NCT00000001", "Checking trial 2 of 3: NCT00000002",
                             "Checking trial 3 of 3: NCT00000003"]

    with pytest.raises(GuidedError, match="not among the assessed trials: NCT00000009"):
        guide.select(session, ["NCT00000009"])
    guide.select(session, ["nct00000002"])
    report = guide.make_report(session)

    assert [r.trials for r in backend.reports] == [({**(session.matched("NCT00000002") or {})},)]
    # Questions by who can answer them, each naming the trial and the criterion; nothing for the reviewer to flag.
    assert [(g["title"], g["questions"]) for g in backend.reports[0].care_team["groups"]] == [
        ("Your oncologist (diagnosis, stage, treatments)", [
            "NCT00000002 — “Receiving chemotherapy.”: I have had surgery: does that count as the treatment "
            "this line asks for?",
            "NCT00000002 — the trial as a whole: Given what I have had so far (surgery), would joining "
            "NCT00000002 be a reasonable option for me?"]),
        ("Your family doctor (other health problems and medicines)", [
            "NCT00000002 — “Heart condition that limits exercise.”: Is there anything in my medical history "
            "that this line would rule out?"]),
        ("The trial team (visits, travel, consent, pregnancy rules)", [
            "NCT00000002 — nearest site: How often would I need to come to City University Clinic, Cambridge, MA, "
            "United States — about 3 miles away, and is help with travel or costs available?"]),
    ]
    assert backend.reports[0].care_team["review"] == {}
    asked = "Given what I have had so far (surgery), would joining NCT00000002 be a reasonable option for me?"
    assert asked in backend.reports[0].questions_for_doctor
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
        "condition": "type 2 diabetes", "age": 55, "sex": "female", "near": "Houston, TX", "radius": 100.0,
        "radius_unit": "mi"}
    assert len(session.candidates) >= 5
    assert all(c["strategies"] for c in session.candidates.values())
    for nct_id, trial in session.candidates.items():
        if trial["strategies"] == ["broader"]:
            continue  # found only under a wider name; matching checks it against the diagnosis
        terms = [r["t"] for r in db.fetch_rows(
            "SELECT name AS t FROM ctgov.conditions WHERE nct_id = :n UNION ALL SELECT name FROM ctgov.keywords "
            "WHERE nct_id = :n UNION ALL SELECT mesh_term FROM ctgov.browse_conditions WHERE nct_id = :n",
            {"n": nct_id})]
        assert condition_matches("type 2 diabetes", {"conditions": terms}), trial
    assert len(session.matched_trials) == min(MAX_MATCHED, len(session.candidates))
    assert all(m["fit_score"] is None if m["verdict"] == "not_relevant" else 0 <= m["fit_score"] <= 100
               for m in session.matched_trials)  # a trial about another condition gets no score
    html = session.report_html or ""
    # Only the chosen trials, plus ids their own registry text names (a master protocol naming its sub-studies).
    own_text = " ".join(str(r["t"] or "") for r in db.fetch_rows(
        "SELECT description AS t FROM ctgov.brief_summaries WHERE nct_id = ANY(:ids) UNION ALL "
        "SELECT description FROM ctgov.detailed_descriptions WHERE nct_id = ANY(:ids) UNION ALL "
        "SELECT criteria FROM ctgov.eligibilities WHERE nct_id = ANY(:ids)", {"ids": chosen}))
    assert set(chosen) <= set(NCT_RE.findall(html)) <= set(chosen) | set(NCT_RE.findall(own_text))
    assert "Questions for your doctor" in html and "type 2 diabetes" in html
    assert re.search(r"<title>[^<]+</title>", html)


# ---- the NSCLC / 62 / male / Lompoc, CA / 200 mi session over the shipped sample ---------------------------

# Each trial's nearest site that may take the patient (its own status recruits or is not given), else its nearest.
_NEAREST_SQL = """
SELECT nct_id, coalesce(min(miles) FILTER (WHERE enrolling), min(miles)) AS miles
FROM (SELECT f.nct_id, 2 * 3958.7613 * asin(least(1, sqrt(
             power(sin(radians((f.latitude - :lat) / 2)), 2) +
             cos(radians(:lat)) * cos(radians(f.latitude)) * power(sin(radians((f.longitude - :lon) / 2)), 2)))) AS miles,
             coalesce(btrim(f.status), '') = '' OR upper(replace(replace(btrim(f.status), ',', ''), ' ', '_')) IN
                 ('RECRUITING', 'NOT_YET_RECRUITING', 'ENROLLING_BY_INVITATION', 'AVAILABLE', 'UNKNOWN',
                  'UNKNOWN_STATUS') AS enrolling
      FROM ctgov.facilities f
      WHERE f.nct_id = ANY(CAST(:ids AS text[])) AND f.latitude IS NOT NULL AND f.longitude IS NOT NULL) d
GROUP BY nct_id
"""
_FRESHNESS_SQL = """
SELECT s.nct_id,
       upper(replace(replace(s.overall_status, ',', ''), ' ', '_')) IN ('RECRUITING', 'NOT_YET_RECRUITING',
                                                                       'ENROLLING_BY_INVITATION')
       AND (s.primary_completion_date < CAST(:today AS date)
            OR coalesce(s.last_update_posted_date, s.last_update_submitted_date) < CAST(:today AS date) - 730) AS stale,
       btrim(coalesce(e.criteria, '')) = '' AS no_text
FROM ctgov.studies s LEFT JOIN ctgov.eligibilities e ON e.nct_id = s.nct_id
WHERE s.nct_id = ANY(CAST(:ids AS text[]))
"""
_SEARCH_TEXT: dict[str, str] = {}
_VERDICT_RANK = {"eligible": 0, "uncertain": 1, "excluded": 2, "not_relevant": 3}


@pytest.fixture(scope="module")
def nsclc_session(db: Any) -> AssistantSession:
    guide = GuidedAssistant(DatabaseBackend(db))
    session = AssistantSession()
    form = IntakeForm(diagnosis="non-small cell lung cancer", age=62, sex="male", location="Lompoc, CA",
                      travel_radius_miles=200.0)
    guide.submit_intake(session, form)
    _SEARCH_TEXT[session.id] = guide.run_search(session).text
    guide.run_matching(session)
    return session


def test_assistant_guided_nsclc_ranks_trials_within_reach_first(db: Any, nsclc_session: AssistantSession) -> None:
    session = nsclc_session
    matches = session.matched_trials
    assert matches
    p = session.patient_profile
    rows = db.fetch_rows(_NEAREST_SQL, {"lat": p["latitude"], "lon": p["longitude"],
                                        "ids": [m["nct_id"] for m in matches]})
    nearest = {r["nct_id"]: float(r["miles"]) for r in rows}
    for m in matches:  # reach is judged on the real nearest site, measured independently here
        expected = None if m["nct_id"] not in nearest else nearest[m["nct_id"]] <= 200.0
        assert m["within_reach"] is expected, m["nct_id"]
        assert bool(m["distance_note"]) == (expected is not True), m["nct_id"]
        if expected is False:
            assert m["distance_note"].startswith("Beyond your travel limit")
    # A trial within 200 miles ranks above any trial outside it with the same or a worse verdict and a record
    # of the same kind (a partial record or a broad trial never outranks a full one about the disease:
    # rank_key).
    kind = ("partial", "broad", "about_diagnosis")
    for i, a in enumerate(matches):
        for b in matches[i + 1:]:
            same_kind = all(bool(a.get(k)) == bool(b.get(k)) for k in kind)
            if same_kind and b["within_reach"] is True and a["within_reach"] is not True:
                assert _VERDICT_RANK[a["verdict"]] < _VERDICT_RANK[b["verdict"]], (a["nct_id"], b["nct_id"])


def test_assistant_guided_nsclc_fit_is_honest(nsclc_session: AssistantSession) -> None:
    matches = nsclc_session.matched_trials
    excluded = [m["fit_score"] for m in matches if m["verdict"] == "excluded"]
    others = [m["fit_score"] for m in matches if m["verdict"] in ("eligible", "uncertain")]
    assert not excluded or not others or max(excluded) < min(others)
    for m in matches:
        statuses = [c["status"] for c in m["criteria"]]
        judged = sum(1 for s in statuses if s in ("met", "not_met"))
        if m["verdict"] != "excluded" and judged * 2 < len(statuses):
            assert m["fit_score"] <= 59 and m["fit_band"] == "needs_information", m["nct_id"]
        assert m["fit_explanation"]


def test_assistant_guided_nsclc_says_criteria_coverage_and_marks_stale_status(
        db: Any, nsclc_session: AssistantSession) -> None:
    import datetime as dt

    session = nsclc_session
    ids = list(session.candidates)
    rows = {r["nct_id"]: r for r in db.fetch_rows(_FRESHNESS_SQL, {"ids": ids, "today": dt.date.today()})}
    missing = sum(1 for i in ids if rows[i]["no_text"])
    found = len(ids)
    text = _SEARCH_TEXT[session.id]
    if missing:
        assert f"{found - missing} of the {found} " in text and f"for the other {missing} only" in text
    else:
        assert "carr" in text and "criteria text" in text
    for m in session.matched_trials:  # the card carries the mark exactly when the record is stale
        card = trial_card(session, m["nct_id"]) or {}
        assert bool(card.get("status_note")) == bool(rows[m["nct_id"]]["stale"]), m["nct_id"]
        if card.get("status_note"):
            assert card["status_note"].startswith("Status may be out of date — last updated ")
        assert (card.get("criteria_text") == "missing from this copy") == bool(rows[m["nct_id"]]["no_text"])


def test_assistant_guided_nsclc_report_states_the_search_truthfully(db: Any, nsclc_session: AssistantSession) -> None:
    session = nsclc_session
    summary = GuidedAssistant.report_summary(session)
    assert "up to 200 miles from Lompoc, CA" in summary
    assert f"We ran {len(session.searches)} search" in summary
    assert not re.search(r"\b1 (searches|trials|strategies)\b", summary)
    facts = search_facts(session)
    detailed = search_sentence(facts)
    for entry in session.searches:
        assert f"{entry['returned']:,} trial" in detailed
    assert not re.search(r"\b1 (searches|trials|strategies)\b", detailed)
    assert f"found {len(session.candidates)} different trial" in summary


def test_assistant_search_sentence_says_a_travel_limit_in_whole_miles() -> None:
    # A radius given in km converts to miles with decimals; one mile is singular.
    assert search_sentence({"radius_miles": 62.1371, "place": "Lyon"}).startswith(
        "You said you can travel up to 62 miles from Lyon.")
    assert search_sentence({"radius_miles": 1.0, "place": "Lyon"}).startswith(
        "You said you can travel up to 1 mile from Lyon.")


def test_assistant_guided_counts_one_trial_in_the_singular() -> None:
    """One trial found and checked: 'I found 1 different trial', not '1 different trials', 'The first is', not 'The
    first ones are', '1 needs more information', not '1 need'."""
    guide, session = GuidedAssistant(MemoryBackend()), AssistantSession()
    guide.submit_intake(session, IntakeForm(diagnosis="hypertension", age=60, sex="male", location="Boston, MA",
                                            travel_radius_miles=None))
    search, matching = guide.run_search(session).text, guide.run_matching(session).text
    assert search.startswith("I found 1 different trial (duplicates across searches removed).")
    assert "\n\nThe first is NCT00000003 (A Study of Blood Pressure Control in Adults)." in search
    assert matching.startswith("I checked 1 trial against their published criteria with fixed rules: 0 look possible, "
                               "1 needs more information, 0 seem to rule you out, 0 are about another condition.")


def test_assistant_guided_words_one_trial_and_a_converted_radius_plainly() -> None:
    """One trial, found only at any distance and without criteria text, with the dashboard's 100 km as the form's
    miles: no '1 of the 1 carries their', 'for the other 1 … they stay', '1 of them have', '1 have no site' or
    'within 62.1371 miles'."""
    backend = MemoryBackend()
    trial = next(t for t in backend.trials if t["nct_id"] == "NCT00000003")
    trial.update(inclusion=[], exclusion=[])
    guide, session = GuidedAssistant(backend), AssistantSession()
    intake = guide.submit_intake(session, IntakeForm(diagnosis="hypertension", age=60, sex="male",
                                                     location="Lompoc, California", travel_radius_miles=100 / 1.609344))
    assert "within 62 miles of Lompoc" in intake.text
    search, matching = guide.run_search(session).text, guide.run_matching(session).text
    assert "- exact (within 62 miles): 0 trials (0 new)" in search
    assert ("It has no eligibility criteria text in our copy of the registry: only its age and sex limits can be "
            "checked here (its full criteria are on ClinicalTrials.gov), so it stays in the “needs information” "
            "band.") in search
    assert ("It has no criteria text in our copy, so only its age and sex limits were checked. It has no site within "
            "your travel limit. First in the list") in matching
    trial.update(inclusion=["Blood pressure above 140/90"])
    session = AssistantSession()
    guide.submit_intake(session, IntakeForm(diagnosis="hypertension", age=60, sex="male", location="Boston, MA",
                                            travel_radius_miles=1))
    assert "It carries its eligibility criteria text in our copy of the registry." in guide.run_search(session).text


def test_assistant_guided_what_to_expect_leaves_the_dates_to_the_report() -> None:
    """The report's 'How long' says when a study started and ends in month words and the right tense; the guided
    'What to expect' beside it said 'It runs from 2019-01 to 2021-06' as well (raw months, present tense)."""
    text = GuidedAssistant._what_to_expect({"phases": ["PHASE2"], "enrollment": 40, "start_date": "2019-01",
                                            "completion_date": "2021-06"})
    assert text == "This is a Phase 2 study. It plans to include about 40 people."


def test_assistant_guided_what_to_expect_says_enrolled_for_an_actual_count() -> None:
    """A completed trial's enrollment is the number it took part (AACT enrollment_type ACTUAL), not a plan; 'What to
    expect' said 'It plans to include about 310 people' for it as for a recruiting trial's estimate."""
    actual = GuidedAssistant._what_to_expect({"phases": ["PHASE3"], "status": "COMPLETED", "enrollment": 310,
                                              "enrollment_type": "ACTUAL"})
    assert actual == "This is a Phase 3 study. It enrolled 310 people."
    planned = GuidedAssistant._what_to_expect({"status": "RECRUITING", "enrollment": 40, "enrollment_type": "ESTIMATED"})
    assert planned == "It plans to include about 40 people."
    # no type given: a completed trial's number is not called a plan
    untyped = GuidedAssistant._what_to_expect({"status": "COMPLETED", "enrollment": 310})
    assert "plans" not in untyped and "310 people" in untyped


def test_details_of_carries_the_enrollment_type(db: Any) -> None:
    from services.assistant.backend import DatabaseBackend

    backend = DatabaseBackend(db)
    kinds = {str(r["nct_id"]): str(r["enrollment_type"] or "").upper()
             for r in db.fetch_rows("SELECT nct_id, enrollment_type FROM ctgov.studies WHERE enrollment IS NOT NULL "
                                    "AND enrollment_type IS NOT NULL ORDER BY nct_id LIMIT 5")}
    assert kinds
    for nct_id, kind in kinds.items():
        details = backend.get_trial_details(nct_id)
        assert details is not None and details.get("enrollment_type") == kind


def test_assistant_guided_calls_the_tools_on_typed_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guided mode builds each tool's arguments model and calls the tool with it: never through the
    model's JSON door (ToolRegistry.run); every search is the dashboard's Filters with a typed place."""
    from services.assistant.registry import ToolRegistry

    def json_door(*_: Any, **__: Any) -> Any:
        raise AssertionError("guided mode called a tool through its JSON arguments")

    called: list[tuple[str, str]] = []
    typed = ToolRegistry.call

    def spy(self: ToolRegistry, name: str, args: Any, ctx: Any) -> dict[str, Any]:
        called.append((name, type(args).__name__))
        return typed(self, name, args, ctx)

    monkeypatch.setattr(ToolRegistry, "run", json_door)
    monkeypatch.setattr(ToolRegistry, "call", spy)
    backend = MemoryBackend()
    guide = GuidedAssistant(backend)
    session = AssistantSession()
    form = IntakeForm(diagnosis="breast cancer", age=52, sex="female", location="Boston, MA",
                      travel_radius_miles=50)
    guide.submit_intake(session, form)
    guide.run_search(session)
    guide.run_matching(session)
    guide.select(session, [session.matched_trials[0]["nct_id"]])
    guide.make_report(session)

    assert dict(called) == {
        "save_patient_profile": "ProfileUpdate", "emit_partial_filters": "FilterChange",
        "update_session_phase": "PhaseChange", "search_trials": "SearchQuery",
        "get_eligibility_criteria": "TrialId", "get_trial_details": "TrialId",
        "get_trial_locations": "SitesQuery", "get_adverse_events": "TrialId",
        "save_matched_trials": "Matches", "emit_trial_cards": "Cards", "generate_report": "ReportDraft"}
    places = {q.origin for q in backend.queries}
    assert len(places) == 1 and None not in places
    assert session.report_html


def test_assistant_guided_checks_trials_about_the_patients_conditions_first() -> None:
    def hit(miles: float | None, criteria: bool = True) -> dict[str, Any]:
        nearest = {"distance_miles": miles} if miles is not None else None
        return {"strategies": ["broader"], "nearest_site": nearest,
                **({} if criteria else {"criteria_text": CRITERIA_MISSING})}

    about, broad = Relevance(True, "", matched=1, closeness=3), Relevance(True, "", broad=True, matched=1)
    other = Relevance(False, "")
    cases = {"near-about": (hit(5), (about, about)), "near-no-text": (hit(1, criteria=False), (about, about)),
             "near-broad": (hit(3), (broad, broad)), "near-other-condition": (hit(2), (about, other)),
             "far-about": (hit(900), (about, about)), "unlocated": (hit(None), (about, about)),
             "near-not-relevant": (hit(1), (other, other)), "no-record": (hit(4), None)}
    order = sorted(cases, key=lambda k: check_order(cases[k][0], 50, cases[k][1]))
    assert order == ["near-about", "near-no-text", "near-broad", "no-record", "near-other-condition",
                     "far-about",
                     "unlocated", "near-not-relevant"]
