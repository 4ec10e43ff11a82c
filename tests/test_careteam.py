"""Questions by specialist: the role matrix, routing, rule and model builders, and the reviewer's flags."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html import unescape
from typing import Any

import pytest

from services.assistant import AssistantSession, careteam
from services.assistant.backend import DatabaseBackend
from services.assistant.careteam import PERMISSIONS, PROFILE_FACTS, ROLES, RoleFacts
from services.assistant.guided import ACTIVITY_LEVELS, GuidedAssistant, IntakeForm
from services.eligibility.match import OPEN_CRITERION_STATUSES
from services.llm import LLMClient
from tests.fake_anthropic import FakeAnthropic, ScriptedTurn, text_block

# A profile holding every fact kind, each with a value no other kind shares, so a role's input can be searched for
# what it must not see.
# Who answers each kind of criterion, written out independently of careteam.PERMISSIONS (which routes them):
# test_careteam_lab_values_reach_only_pathology_and_the_specialist checks the two agree.
CATEGORY_ROLE: dict[str, str] = {
    "disease": "specialist", "treatment": "specialist", "activity": "specialist",
    "biomarker": "pathology_lab", "lab": "pathology_lab", "imaging": "radiology",
    "heart": "primary_care", "condition": "primary_care", "medicine": "primary_care",
    "logistics": "trial_team", "reproductive": "trial_team",
}
PROFILE: dict[str, Any] = {
    "diagnosis": "non-small cell lung cancer", "subtype": "adenocarcinoma", "stage": "IVB", "age": 62, "sex": "male",
    "biomarkers": ["EGFR exon 19 deletion", "PD-L1 80%"], "labs": ["ANC 1.9 x10^9/L", "creatinine 1.1 mg/dL"],
    "treatments": ["osimertinib", "carboplatin"], "ecog": 1, "activity_level": list(ACTIVITY_LEVELS)[1],
    "other_conditions": ["hepatitis B", "heart failure", "hypertension"], "medicines": ["apixaban"],
    "vitals": ["blood pressure 150/95"], "notes": "Smoked 30 pack-years; daughter drives me.",
    "location": "Lompoc, CA", "travel_radius_miles": 200.0, "latitude": 34.64, "longitude": -120.46,
}
# One open criterion of every category, and a decided one.
CRITERIA: list[tuple[str, str, str]] = [
    ("inclusion", "Stage IV disease", "not_enough_information"),  # disease
    ("inclusion", "Progression on prior platinum-based chemotherapy", "needs_discussion"),  # treatment
    ("inclusion", "ECOG performance status 0-1", "met"),  # activity, decided: no question
    ("inclusion", "Documented KRAS G12C mutation", "not_enough_information"),  # biomarker
    ("inclusion", "Absolute neutrophil count ≥ 1.5 x 10^9/L", "not_enough_information"),  # lab
    ("inclusion", "Measurable disease per RECIST 1.1", "not_enough_information"),  # imaging
    ("exclusion", "Untreated brain metastases", "needs_discussion"),  # imaging
    ("exclusion", "QTc > 470 ms on ECG", "not_enough_information"),  # heart
    ("exclusion", "Active hepatitis B or C infection", "needs_discussion"),  # condition
    ("exclusion", "Concomitant use of strong CYP3A4 inducers", "not_enough_information"),  # medicine
    ("inclusion", "Willing and able to comply with scheduled visits", "not_enough_information"),  # logistics
    ("inclusion", "Women of childbearing potential must use contraception", "not_enough_information"),  # reproductive
]


def _match(nct_id: str, criteria: list[tuple[str, str, str]] | None = None, **extra: Any) -> dict[str, Any]:
    return {"nct_id": nct_id, "verdict": "uncertain", "nearest_site": "Harbor Clinic, Santa Barbara, CA — about 50 "
            "miles away", "distance_miles": 50.0,
            "criteria": [{"type": k, "criterion": t, "status": s, "plain": t, "reason": f"Reason about {t}."}
                         for k, t, s in (CRITERIA if criteria is None else criteria)], **extra}


SELECTED = [_match("NCT01234567"), _match("NCT07654321")]


def _values(kind: str) -> list[str]:
    """The strings a fact kind contributes to the profile (what must not leak into a role that may not see it)."""
    out: list[str] = []
    for key in PROFILE_FACTS[kind]:
        value = PROFILE.get(key)
        if value in (None, ""):
            continue
        out += [str(v) for v in value] if isinstance(value, list) else [str(value)]
    return out


# Values two kinds share would make the leak check ambiguous: every kind's values are its own.
_OWN = {kind: _values(kind) for kind in PROFILE_FACTS}
assert all(not set(a) & set(b) for k1, a in _OWN.items() for k2, b in _OWN.items() if k1 != k2)


def _check_scoped(role: str, facts: RoleFacts) -> None:
    """A role's input holds every permitted kind's values, none of a forbidden kind's, and only its own criteria."""
    text = facts.as_json()
    allowed_keys = {k for kind in PERMISSIONS[role] for k in PROFILE_FACTS.get(kind, ())}  # type: ignore[index]
    assert set(facts.profile) == allowed_keys & set(PROFILE), role
    for kind, values in _OWN.items():
        for value in values:
            if kind in PERMISSIONS[role]:  # type: ignore[index]
                assert value in text, (role, kind, value)
            elif not value.isdigit():  # a bare number such as ECOG 1 is found by the key check above
                assert value not in text, (role, kind, value)
    assert {f"criteria:{i.category}" for i in facts.items} <= PERMISSIONS[role]  # type: ignore[index]
    assert all(i.status in OPEN_CRITERION_STATUSES for i in facts.items)
    assert "Reason about" not in text  # judgement reasons may quote the patient: never passed on
    assert bool(facts.sites) == (role == "trial_team")


@pytest.mark.parametrize("role", ROLES)
def test_careteam_role_input_holds_only_permitted_facts(role: str) -> None:
    facts = careteam.facts_for(role, PROFILE, SELECTED)  # type: ignore[arg-type]
    _check_scoped(role, facts)
    if role == "radiology":
        assert [i.criterion for i in facts.items] == ["Measurable disease per RECIST 1.1", "Untreated brain metastases"] * 2
        assert facts.profile == {"age": 62, "sex": "male", "diagnosis": "non-small cell lung cancer",
                                 "subtype": "adenocarcinoma", "stage": "IVB"}


def test_careteam_lab_values_reach_only_pathology_and_the_specialist() -> None:
    assert {r for r in ROLES if "lab_values" in PERMISSIONS[r]} == {"pathology_lab", "specialist"}
    assert {r for r in ROLES if "criteria:lab" in PERMISSIONS[r]} == {"pathology_lab"}
    # Every criterion category has exactly one role that may see it, the one it is routed to.
    for category in careteam.CATEGORIES:
        assert [r for r in ROLES if f"criteria:{category}" in PERMISSIONS[r]] == [CATEGORY_ROLE[category]]


def test_careteam_each_builder_gets_only_its_scoped_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    received: dict[str, RoleFacts] = {}

    def spy(role: str) -> careteam.Builder:
        real = careteam.RULE_BUILDERS[role]  # type: ignore[index]

        def builder(facts: RoleFacts) -> list[careteam.Question]:
            received[role] = facts
            return real(facts)
        return builder

    monkeypatch.setattr(careteam, "RULE_BUILDERS", {r: spy(r) for r in ROLES})
    careteam.build(PROFILE, SELECTED)
    assert set(received) == set(ROLES)
    for role, facts in received.items():
        _check_scoped(role, facts)


@pytest.mark.parametrize(("text", "role"), [
    ("Histologically or cytologically confirmed adenocarcinoma", "pathology_lab"),
    ("Known EGFR sensitizing mutation", "pathology_lab"),
    ("Platelets ≥ 100,000/mm3", "pathology_lab"),
    ("Adequate organ function", "pathology_lab"),
    ("HbA1c between 7.0% and 10.5%", "pathology_lab"),
    ("Measurable disease per RECIST v1.1", "radiology"),
    ("One lesion not previously irradiated that qualifies as a RECIST 1.1 target lesion", "radiology"),
    ("Symptomatic CNS metastases", "radiology"),
    ("Stage IIIB or IV disease", "specialist"),
    ("Prior treatment with an EGFR tyrosine kinase inhibitor", "specialist"),
    ("ECOG performance status of 0 or 1", "specialist"),
    ("Life expectancy of at least 12 weeks", "specialist"),
    ("History of interstitial lung disease", "primary_care"),
    ("LVEF below 50%", "primary_care"),
    ("Requires chronic systemic corticosteroids", "primary_care"),
    ("Pregnant or breastfeeding", "trial_team"),
    ("Able to give written informed consent", "trial_team"),
    ("Participation in another interventional trial within 30 days", "trial_team"),
])
def test_careteam_routes_a_criterion_to_who_can_answer_it(text: str, role: str) -> None:
    assert CATEGORY_ROLE[careteam.category_of(text)] == role


@pytest.mark.parametrize(("diagnosis", "name"), [
    ("non-small cell lung cancer", "oncologist"), ("type 2 diabetes", "endocrinologist"),
    ("heart failure", "cardiologist"), ("COPD", "pulmonologist"), ("rheumatoid arthritis", "rheumatologist"),
    ("chronic kidney disease", "nephrologist"), ("Parkinson's disease", "neurologist"),
    ("renal cell carcinoma", "oncologist"), ("sickle cell anemia", "treating specialist"),
])
def test_careteam_names_the_treating_specialist_by_condition_area(diagnosis: str, name: str) -> None:
    assert careteam.specialist_name(diagnosis) == name


_LINE = re.compile(r"^(NCT\d{8}) — (?:(“.+”)|the trial as a whole|nearest site): (.+\?)$")


def test_careteam_rules_questions_name_trial_and_criterion() -> None:
    team = careteam.build(PROFILE, SELECTED)
    assert [g.role for g in team.groups] == list(ROLES) and {g.source for g in team.groups} == {"rules"}
    for group in team.groups:
        for q in group.questions:
            found = _LINE.match(q.line())
            assert found, q.line()
            assert found.group(1) in ("NCT01234567", "NCT07654321")
            for named in q.criteria:  # each quote is an open criterion of that trial, routed to this role
                assert CATEGORY_ROLE[careteam.category_of(named)] == group.role
                assert named in [t for _, t, s in CRITERIA if s != "met"]
    radiology = next(g for g in team.groups if g.role == "radiology")
    # Worded from data/report/questions.json by the line's kind: the line's own term (RECIST) is named.
    assert [q.line() for q in radiology.questions] == [
        "NCT01234567 — “Measurable disease per RECIST 1.1”: Do my latest scans show what this line asks for "
        "(RECIST), and are they recent enough?",
        "NCT01234567 — “Untreated brain metastases”: Have my scans shown anything this line leaves out?",
        "NCT07654321 — “Measurable disease per RECIST 1.1”: Do my latest scans show what this line asks for "
        "(RECIST), and are they recent enough?",
        "NCT07654321 — “Untreated brain metastases”: Have my scans shown anything this line leaves out?",
    ]
    team_lines = [q.line() for q in next(g for g in team.groups if g.role == "trial_team").questions]
    assert team_lines[:2] == [
        "NCT01234567 — “Willing and able to comply with scheduled visits”: What does this ask of me in practice: "
        "visits, tests, time and travel?",
        "NCT01234567 — “Women of childbearing potential must use contraception”: What would this line's "
        "pregnancy and birth-control rules ask of me, as a man?"]
    rest = careteam.build(PROFILE, [_match("NCT01234567", [
        ("inclusion", "Other inclusion/exclusion criteria are specified in the protocol", "not_enough_information")])])
    assert [q.line() for g in rest.groups if g.role == "trial_team" for q in g.questions][0] == (
        "NCT01234567 — “Other inclusion/exclusion criteria are specified in the protocol”: What are this trial's full "
        "eligibility criteria, and could you go through them with me?")
    assert ("NCT01234567 — nearest site: How often would I need to come to Harbor Clinic, Santa Barbara, CA — about "
            "50 miles away, and is help with travel or costs available?") in team_lines
    title = next(g.title for g in team.groups if g.role == "specialist")
    assert title == "Your oncologist (diagnosis, stage, treatments)"


# ---- the reviewer --------------------------------------------------------------------------------------------


def test_careteam_reviewer_flags_conflict_safety_missing_and_new() -> None:
    match = _match("NCT01234567", [
        ("inclusion", "Stage IV disease", "not_met"),
        ("exclusion", "Active hepatitis B or C infection", "needs_discussion"),
        ("inclusion", "Documented KRAS G12C mutation", "not_enough_information"),
        ("inclusion", "Women of childbearing potential must use contraception", "not_enough_information"),
    ])
    flags = careteam.review(PROFILE, [match])
    assert [(f.nct_id, f.kind) for f in flags] == [
        ("NCT01234567", "conflict"), ("NCT01234567", "safety"), ("NCT01234567", "missing"),
        ("NCT01234567", "new"), ("NCT01234567", "new"), ("NCT01234567", "new")]
    assert flags[0].text == "“Stage IV disease”: your answers suggest you do not pass this line. Reason about Stage IV disease."
    assert "“hepatitis”" in flags[1].text and "“hepatitis B”" in flags[1].text
    assert flags[2].text.startswith("“Documented KRAS G12C mutation”: this decides whether you can join")
    # Heart failure is serious and unmentioned; the patient's EGFR and PD-L1 results are markers the trial's KRAS
    # line leaves out; hypertension (common, not on the serious list) and hepatitis B (the trial names it) are silent.
    assert [f.text.split("”")[0].split("“")[1] for f in flags if f.kind == "new"] == [
        "heart failure", "EGFR exon 19 deletion", "PD-L1 80%"]
    # The saved criteria may be the model's choice or capped at 60 lines: only those checked are claimed.
    assert all(f.text.endswith("none of this trial's criteria we checked mention it. Ask whether it matters for "
                               "this trial.") for f in flags if f.kind == "new")


def test_careteam_reviewer_is_silent_when_nothing_applies() -> None:
    calm = _match("NCT01234567", [("inclusion", "Stage IV disease", "met"),
                                  ("exclusion", "Active hepatitis B or C infection", "met"),
                                  ("exclusion", "History of heart failure", "met"),
                                  ("inclusion", "Measurable disease per RECIST 1.1", "not_enough_information"),
                                  ("inclusion", "Women of childbearing potential must use contraception", "met")])
    assert careteam.review(PROFILE, [calm]) == []
    assert careteam.build(PROFILE, [calm]).as_report()["review"] == {}
    # A woman who may become pregnant gets the safety point for the same open line.
    woman = {**PROFILE, "sex": "female", "age": 40, "other_conditions": []}
    open_line = _match("NCT01234567", [("inclusion", "Women of childbearing potential must use contraception",
                                        "not_enough_information")])
    assert [f.kind for f in careteam.review(woman, [open_line])] == ["safety"]
    assert careteam.review({**PROFILE, "other_conditions": []}, [open_line]) == []  # a man; the line is for women


# ---- the model path --------------------------------------------------------------------------------------------


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


def _client(fake: FakeAnthropic) -> LLMClient:
    return LLMClient(api_key="test-key", base_url=fake.base_url, max_retries=0)


def _facts_of(body: dict[str, Any]) -> dict[str, Any]:
    content = body["messages"][0]["content"]
    return dict(json.loads(content.split("<facts>\n", 1)[1].split("\n</facts>", 1)[0]))


def _role_of_request(body: dict[str, Any]) -> str:
    return next(r for r in ROLES if body["system"].startswith(careteam.load_role_prompt(r)[:60]))


def _answer(body: dict[str, Any], mode: dict[str, str]) -> ScriptedTurn:
    facts = _facts_of(body)
    role = _role_of_request(body)
    ids = [c["id"] for c in facts["criteria"]]
    kind = mode.get(role, "valid")
    if kind == "prose":
        return ScriptedTurn([text_block("Here are some questions you could ask your doctor!")])
    if kind == "unknown_ids":
        answer = {"questions": [{"criterion_id": "c999", "question": "Is this about me?"}]}
    elif kind == "mixed":
        answer = {"questions": [{"criterion_id": ids[0], "question": f"{role}: what does my record show here?"},
                                {"criterion_id": "c999", "question": "Invented criterion?"},
                                {"criterion_id": ids[0], "question": "No question mark", "extra": 1}]}
    else:
        answer = {"questions": [{"criterion_id": i, "question": f"{role}: what does my record show about {i}?"}
                                for i in ids[:2]]}
    return ScriptedTurn([text_block(json.dumps(answer))])


def test_careteam_model_path_one_scoped_call_per_role(fake: FakeAnthropic) -> None:
    fake.route(lambda body: True, lambda body: _answer(body, {}))
    replies: list[dict[str, Any]] = []
    team = careteam.build(PROFILE, SELECTED, client=_client(fake), model="test-model", on_reply=replies.append)

    assert sorted(_role_of_request(r) for r in fake.requests) == sorted(ROLES) and len(replies) == len(ROLES)
    for body in fake.requests:
        role = _role_of_request(body)
        assert body["model"] == "test-model" and body["max_tokens"] == careteam.MODEL_MAX_TOKENS
        facts = careteam.facts_for(role, PROFILE, SELECTED)  # type: ignore[arg-type]
        assert _facts_of(body) == json.loads(facts.as_json())  # exactly the scoped input, nothing more
        _check_scoped(role, facts)
        for kind, values in _OWN.items():  # the prompt's user message too: no forbidden value anywhere in it
            if kind not in PERMISSIONS[role]:  # type: ignore[index]
                assert not any(v in body["messages"][0]["content"] for v in values if not v.isdigit()), (role, kind)
    for group in team.groups:
        assert group.source == "model" and group.note == ""
        facts = careteam.facts_for(group.role, PROFILE, SELECTED)
        by_id = {i.id: i for i in facts.items}
        worded = [q for q in group.questions if not q.about]
        assert [q.text for q in worded] == [f"{group.role}: what does my record show about {i}?"
                                           for i in list(by_id)[:2]]
        assert all(q.nct_id == by_id[q.text.split("about ")[1][:-1]].nct_id for q in worded)
    # The trial-as-a-whole and nearest-site questions are the rules' own and stay.
    assert sum(1 for g in team.groups for q in g.questions if q.about) == 2 * len(SELECTED)


def test_careteam_model_bad_answers_are_dropped_and_rules_fill_in(fake: FakeAnthropic) -> None:
    mode = {"radiology": "prose", "pathology_lab": "unknown_ids", "primary_care": "mixed"}
    fake.route(lambda body: True, lambda body: _answer(body, mode))
    team = careteam.build(PROFILE, SELECTED, client=_client(fake))
    rules = careteam.build(PROFILE, SELECTED)
    got = {g.role: g for g in team.groups}
    expected = {g.role: g for g in rules.groups}
    assert (got["radiology"].source, got["radiology"].note) == (
        "rules", "Written by fixed rules: the model's answer could not be read.")
    assert got["radiology"].questions == expected["radiology"].questions
    assert (got["pathology_lab"].source, got["pathology_lab"].note) == (
        "rules", "Written by fixed rules: none of the model's questions could be used.")
    assert got["pathology_lab"].questions == expected["pathology_lab"].questions
    assert got["primary_care"].source == "model"
    assert [q.text for q in got["primary_care"].questions] == ["primary_care: what does my record show here?"]
    assert got["primary_care"].note == "2 of the model's questions could not be used and were left out."
    assert got["specialist"].source == got["trial_team"].source == "model"


def test_careteam_model_unreachable_falls_back_to_rules(fake: FakeAnthropic) -> None:
    only_imaging = [_match("NCT01234567", [("inclusion", "Measurable disease per RECIST 1.1",
                                            "not_enough_information")])]
    fake.add_error(500)
    team = careteam.build(PROFILE, only_imaging, client=_client(fake))
    assert len(fake.requests) == 1 and _role_of_request(fake.requests[0]) == "radiology"
    radiology = next(g for g in team.groups if g.role == "radiology")
    assert (radiology.source, radiology.note) == ("rules", "Written by fixed rules: the model could not be reached.")
    assert [q.line() for q in radiology.questions] == [
        "NCT01234567 — “Measurable disease per RECIST 1.1”: Do my latest scans show what this line asks for "
        "(RECIST), and are they recent enough?"]


def test_careteam_parse_questions_caps_and_checks_every_entry() -> None:
    facts = careteam.facts_for("radiology", PROFILE, SELECTED)
    long = "Is " + "very " * 80 + "long?"
    reply = json.dumps({"questions": [
        {"criterion_id": "c5", "question": "Does my last scan show measurable disease?"},
        {"criterion_id": "c5", "question": long},  # too long
        {"criterion_id": "c3", "question": "Is my KRAS test done?"},  # c3 is a biomarker line: not radiology's
        {"criterion_id": "c6", "question": "Not a question."},
        "just a string",
    ]})
    kept, dropped = careteam.parse_questions(f"```json\n{reply}\n```", facts)
    assert [(q.nct_id, q.criteria, q.text) for q in kept] == [
        ("NCT01234567", ("Measurable disease per RECIST 1.1",), "Does my last scan show measurable disease?")]
    assert dropped == 4
    with pytest.raises(careteam.UnusableAnswer):
        careteam.parse_questions('{"questions": "none"}', facts)


# ---- a realistic NSCLC session over the shipped sample -----------------------------------------------------------


@pytest.fixture(scope="module")
def nsclc(db: Any) -> AssistantSession:
    guide = GuidedAssistant(DatabaseBackend(db))
    session = AssistantSession()
    form = IntakeForm(diagnosis="non-small cell lung cancer", stage="IV", subtype="adenocarcinoma", age=62, sex="male",
                      location="Lompoc, CA", travel_radius_miles=200.0,
                      biomarkers=("EGFR exon 19 deletion", "PD-L1 50%"), treatments=("carboplatin", "pemetrexed"),
                      other_conditions=("hypertension", "hepatitis B"), activity_level=list(ACTIVITY_LEVELS)[1])
    guide.submit_intake(session, form)
    guide.run_search(session)
    guide.run_matching(session)
    ids = [m["nct_id"] for m in session.matched_trials if m.get("criteria_text") != "missing from this copy"][:3]
    guide.select(session, ids)
    guide.make_report(session)
    return session


def test_careteam_nsclc_report_groups_questions_by_specialist(nsclc: AssistantSession) -> None:
    selected = [m for i in nsclc.selected_nct_ids if (m := nsclc.matched(i)) is not None]
    team = careteam.build(nsclc.patient_profile, selected)
    assert team.groups[0].title == "Your oncologist (diagnosis, stage, treatments)"
    open_by_trial = {m["nct_id"]: {c["plain"] for c in m["criteria"] if c["status"] in OPEN_CRITERION_STATUSES}
                     for m in selected}
    for group in team.groups:
        assert group.questions and len([q for q in group.questions if not q.about]) <= careteam.MAX_PER_ROLE
        for q in group.questions:
            assert q.nct_id in open_by_trial and q.line().startswith(q.nct_id + " — ")
            assert all(any(p.startswith(c.removesuffix("…")) for p in open_by_trial[q.nct_id]) for c in q.criteria)
            assert q.criteria or q.about in ("the trial as a whole", "nearest site")
    # Every selected trial with an open measurable-disease line has a radiology question naming it.
    recist = {n for n, open_ in open_by_trial.items() if any(re.search(r"RECIST|measurable", c, re.I) for c in open_)}
    radiology = next((g for g in team.groups if g.role == "radiology"), None)
    assert recist <= {q.nct_id for q in (radiology.questions if radiology else ())}
    html = nsclc.report_html or ""
    assert "Questions for your doctor, by who can answer them" in html
    for group in team.groups:
        assert f"<h3>{group.title}</h3>" in html
    # Only what the reviewer flagged is shown, under each flagged trial.
    flagged = {f.nct_id for f in team.flags}
    assert html.count("Points to check before you go further") == len(flagged)
    shown = unescape(html)
    assert all(f.text in shown for f in team.flags)
    for m in selected:  # hepatitis B is serious: every trial says where its criteria name it, or that none do
        named = "hepatitis" in " ".join(c["criterion"] for c in m["criteria"]).lower()
        said = [f.text for f in team.flags if f.nct_id == m["nct_id"] and "“hepatitis B”" in f.text]
        assert len(said) == 1
        assert ("none of this trial's criteria we checked mention it" in said[0]) != named


def test_careteam_report_tool_asks_the_model_per_role_in_claude_mode(fake: FakeAnthropic) -> None:
    from services.assistant import build_registry
    from services.assistant.registry import ToolContext
    from tests.memory_backend import MemoryBackend

    fake.route(lambda body: True, lambda body: _answer(body, {"trial_team": "prose"}))
    session = AssistantSession(phase="report")
    session.patient_profile = dict(PROFILE)
    session.matched_trials = [{**m, "fit_score": 40} for m in SELECTED]
    session.selected_nct_ids = [m["nct_id"] for m in SELECTED]
    backend = MemoryBackend()
    ctx = ToolContext(session, backend, model=_client(fake))
    args = {"summary": "S.", "questions_for_doctor": ["Is now a good time to join a trial?"], "glossary": []}

    outcome = build_registry().run("generate_report", args, ctx)

    assert not outcome.is_error, outcome.content
    assert len(fake.requests) == len(ROLES) and session.usage.model_calls == len(ROLES)
    assert ctx.statuses.get_nowait().startswith("Preparing questions for each of the people who can answer them")
    groups = {g["role"]: g for g in backend.reports[0].care_team["groups"]}
    assert [g["source"] for g in groups.values()] == ["model", "model", "model", "model", "rules"]
    assert groups["trial_team"]["note"] == "Written by fixed rules: the model's answer could not be read."
    assert groups["radiology"]["questions"][0] == "NCT01234567 — “Measurable disease per RECIST 1.1”: radiology: what " \
                                                  "does my record show about c5?"
    assert set(backend.reports[0].care_team["review"]) == {"NCT01234567", "NCT07654321"}
