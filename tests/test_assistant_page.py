"""The Assistant page with AppTest: a whole model conversation through the fake API, guided mode, resuming a link."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from services import inert
from services.assistant import ACTIVITY_LEVELS, AssistantSession, build_registry
from services.assistant.session import CONVERSATION_PHASES
from services.assistant.store import SessionStore, storage_key
from services.dashboard.filters import Filters
from services.trials import NCT_RE
from tests.conftest import PROJECT
from tests.fake_anthropic import FakeAnthropic, ScriptedTurn, text_block, tool_block

PAGE = str(PROJECT / "app_pages" / "assistant.py")
EXPLORE = "app_pages/explore.py"
ACTIVE_LIGHT_WORK = list(ACTIVITY_LEVELS)[1]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-real")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        yield server


def _results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The parsed tool results the app sent back in the newest user message."""
    last = body["messages"][-1]["content"]
    return [json.loads(b["content"]) for b in last if b.get("type") == "tool_result"]


def _all_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for message in body["messages"]:
        if message["role"] == "user" and isinstance(message["content"], list):
            out += [json.loads(b["content"]) for b in message["content"] if b.get("type") == "tool_result"]
    return out


def _tools(*calls: tuple[str, dict[str, Any]], text: str | None = None) -> ScriptedTurn:
    content = ([text_block(text)] if text else []) + [tool_block(name, args) for name, args in calls]
    return ScriptedTurn(content, stop_reason="tool_use")


class LungScript:
    """The model's side of the NSCLC conversation; later steps read the app's tool results like a model would."""

    def __init__(self) -> None:
        self.place: dict[str, Any] = {}
        self.candidates: list[str] = []

    def where(self) -> dict[str, Any]:
        place = self.place
        return {"latitude": place["latitude"], "longitude": place["longitude"], "age": 62, "sex": "male"}

    def after_geocode(self, body: dict[str, Any]) -> ScriptedTurn:
        self.place = _results(body)[0]
        return _tools(
            ("save_patient_profile", {"location": "Lompoc, California", "latitude": self.place["latitude"],
                                      "longitude": self.place["longitude"], "travel_radius_miles": 200}),
            ("emit_partial_filters", {"near": "Lompoc, California", "radius": 200, "radius_unit": "mi"}),
            ("emit_widget", {"field": "activity_level", "question": "Which sentence fits your days best?",
                             "widget_type": "single_select"}),
        )

    def searches(self, body: dict[str, Any]) -> ScriptedTurn:
        near = dict(self.where(), radius_miles=200)
        return _tools(("emit_status", {"message": "Searching for trials near Lompoc…"}),
                      ("search_trials", {"strategy": "exact", "condition": "NSCLC", **near}),
                      ("search_trials", {"strategy": "broader", "condition": "lung cancer", **near}))

    def wider(self, body: dict[str, Any]) -> ScriptedTurn:
        return _tools(("search_trials", {"strategy": "wider_radius", "condition": "NSCLC", **self.where()}))

    def summarise_search(self, body: dict[str, Any]) -> ScriptedTurn:
        found = [t["nct_id"] for r in _all_results(body) if "trials" in r for t in r["trials"]]
        self.candidates = list(dict.fromkeys(found))[:3]
        return _tools(("update_session_phase", {"phase": "matching", "reason": "searches done"}),
                      text=f"I found {len(set(found))} trials, for example {', '.join(self.candidates)}.")

    def lookups(self, body: dict[str, Any]) -> ScriptedTurn:
        calls: list[tuple[str, dict[str, Any]]] = [("emit_status", {"message": "Checking 3 trials"})]
        for nct_id in self.candidates:
            calls += [("get_eligibility_criteria", {"nct_id": nct_id}), ("get_trial_locations", {"nct_id": nct_id})]
        return _tools(*calls)

    def save_matches(self, body: dict[str, Any]) -> ScriptedTurn:
        results = _results(body)[1:]
        matches = []
        for i, nct_id in enumerate(self.candidates):
            eligibility, locations = results[2 * i], results[2 * i + 1]
            criteria = [{"type": "inclusion", "criterion": f"Ages {eligibility['ages']}", "status": "met",
                         "plain": "You need to be an adult.", "reason": "You are 62."}]
            criteria += [{"type": "inclusion", "criterion": c, "status": "not_enough_information",
                          "plain": "Your doctor needs to confirm this.", "reason": "Not in your profile."}
                         for c in eligibility["inclusion"][:3]]
            nearest = locations["sites"][0] if locations["sites"] else {}
            matches.append({
                "nct_id": nct_id, "fit_score": 70 - 10 * i, "verdict": "uncertain",
                "summary": f"A study of NSCLC ({nct_id}); several criteria need your records.",
                "criteria": criteria,
                "unknowns": [{"kind": "record", "text": "Your pathology report"},
                             {"kind": "question", "text": "Has my cancer been tested for EGFR?"}],
                "nearest_site": f"{nearest.get('city', 'unknown')}, about {nearest.get('distance_miles')} miles",
            })
        return _tools(("save_matched_trials", {"trials": matches}))

    def cards(self, body: dict[str, Any]) -> ScriptedTurn:
        return _tools(("emit_trial_cards", {"nct_ids": self.candidates, "selectable": True}),
                      ("update_session_phase", {"phase": "selection", "reason": "all scored"}),
                      text=f"The best fit is {self.candidates[0]}. Tick the trials you want in your report.")

    def report(self, body: dict[str, Any]) -> ScriptedTurn:
        return _tools(("generate_report", {
            "summary": "You are 62, with stage IIIA adenocarcinoma of the lung (NSCLC), living in Lompoc.",
            "questions_for_doctor": ["Has my tumour been tested for EGFR and ALK?", "Is my cancer measurable on a scan?"],
            "glossary": [{"term": "NSCLC", "meaning": "Non-small cell lung cancer, the most common kind."}]}))

    @staticmethod
    def care_team(body: dict[str, Any]) -> ScriptedTurn:
        """A care-team role's call (outside the script): one question on the first criterion it was shown."""
        facts = json.loads(body["messages"][0]["content"].split("<facts>", 1)[1].split("</facts>", 1)[0])
        first = facts["criteria"][0]
        return ScriptedTurn([text_block(json.dumps({"questions": [
            {"criterion_id": first["id"], "question": f"What do my records say about this for {first['nct_id']}?"}]}))])

    def queue(self, fake: FakeAnthropic) -> None:
        """Every reply of the conversation, in order (two or more per patient message)."""
        fake.route(lambda body: str(body.get("system", "")).startswith("You help a patient prepare questions"),
                   self.care_team)
        fake.add_tools(("emit_widget", {"field": "diagnosis", "question": "Which kind of lung cancer is it?",
                                        "widget_type": "single_select", "allow_other": True,
                                        "options": ["Non-small cell lung cancer (NSCLC)", "Small cell lung cancer",
                                                    "I'm not sure"]}),
                       text="I'm sorry to hear about your diagnosis. I'll help you look.")
        fake.add_text("Please choose the answer that fits.")
        fake.add_tools(("save_patient_profile", {"diagnosis": "non-small cell lung cancer"}),
                       ("emit_partial_filters", {"condition": "NSCLC"}))
        fake.add_text("Thank you. Do you know the stage and the cell type?")
        fake.add_tools(("save_patient_profile", {"stage": "IIIA", "subtype": "adenocarcinoma",
                                                 "treatments": ["carboplatin", "pemetrexed", "radiation"]}))
        fake.add_text("How old are you, and what sex were you assigned at birth?")
        fake.add_tools(("save_patient_profile", {"age": 62, "sex": "male"}),
                       ("emit_partial_filters", {"age": 62, "sex": "male"}))
        fake.add_text("Where do you live, and how far could you travel for a trial?")
        fake.add_tools(("geocode_location", {"place": "Lompoc, California"}))
        fake.add(self.after_geocode)
        fake.add_text("Thanks. One more question about your daily activity.")
        fake.add_text("Here is what I have: NSCLC stage IIIA adenocarcinoma, 62, male, Lompoc, up to 200 miles. "
                      "Is that right?")
        fake.add_tools(("save_patient_profile", {"complete": True}),
                       ("update_session_phase", {"phase": "search", "reason": "profile confirmed"}))
        fake.add(self.searches)
        fake.add(self.wider)
        fake.add(self.summarise_search)
        fake.add(lambda body: ScriptedTurn([text_block(f"Next I will check {', '.join(self.candidates)}.")]))
        fake.add(self.lookups)
        fake.add(self.save_matches)
        fake.add(self.cards)
        fake.add(lambda body: ScriptedTurn([text_block("Take your time choosing.")]))
        fake.add_tools(("update_session_phase", {"phase": "report", "reason": "selection received"}))
        fake.add(self.report)
        fake.add_tools(("update_session_phase", {"phase": "followup", "reason": "report written"}))
        fake.add_text("Your report is ready. It covers the two trials you chose.")


def _chat(at: AppTest, text: str) -> AppTest:
    at.chat_input(key="asst_chat").set_value(text)
    return at.run()


def _answer_widget(at: AppTest, widget_id: str, choice: str) -> AppTest:
    at.radio(key=f"pick_{widget_id}").set_value(choice)
    next(b for b in at.button if b.label == "Send answer").click()
    return at.run()


def _ok(at: AppTest) -> None:
    assert [e.value for e in at.exception] == []
    assert [e.value for e in at.error] == []


def test_assistant_page_full_conversation_through_fake_api(db: Any, fake: FakeAnthropic) -> None:
    script = LungScript()
    script.queue(fake)
    at = AppTest.from_file(PAGE, default_timeout=240).run()
    _ok(at)

    _chat(at, "Hello. I have lung cancer and I'm looking for a clinical trial.")
    _answer_widget(at, "w1", "Non-small cell lung cancer (NSCLC)")
    _chat(at, "Stage IIIA adenocarcinoma. I had carboplatin and pemetrexed with radiation.")
    _chat(at, "I'm 62 and male.")
    _chat(at, "Lompoc, California. I can travel up to 200 miles.")
    _answer_widget(at, "w2", ACTIVE_LIGHT_WORK)
    _chat(at, "Yes, that's right.")
    _ok(at)
    session: AssistantSession = at.session_state["asst_session"]
    assert session.phase == "matching" and session.flags["intake_complete"]
    assert session.patient_profile["ecog"] == 1

    # The intake reached the shared filters: the Explore page's sidebar shows them.
    assert at.session_state["filters"] == Filters(condition="NSCLC", near="Lompoc, California", radius=200.0,
                                                  age=62.0, sex="MALE")
    explore = AppTest.from_file(str(PROJECT / EXPLORE), default_timeout=240)
    explore.session_state["filters"] = at.session_state["filters"]
    explore.session_state["url_read"] = True
    explore.run()
    assert [e.value for e in explore.exception] == []
    assert (explore.text_input(key="flt_condition").value, explore.text_input(key="flt_near").value,
            explore.number_input(key="flt_radius").value, explore.number_input(key="flt_age").value,
            explore.selectbox(key="flt_sex").value) == ("NSCLC", "Lompoc, California", 200.0, 62.0, "MALE")

    _chat(at, "Please check which ones might fit me.")
    _ok(at)
    assert session.phase == "selection"
    picks = [c for c in at.checkbox if c.key and c.key.startswith("asst_pick_")]
    assert [c.key.removeprefix("asst_pick_") for c in picks] == script.candidates
    assert len(at.get("deck_gl_json_chart")) == 1
    picks[0].check()
    picks[2].check()
    at.run()
    next(b for b in at.button if b.key == "asst_select").click()
    at.run()
    _ok(at)

    chosen = [script.candidates[0], script.candidates[2]]
    assert (session.phase, session.selected_nct_ids) == ("followup", chosen)
    assert set(NCT_RE.findall(session.report_html or "")) == set(chosen)
    assert fake.remaining == 0
    # The report groups its questions by who can answer them, worded by one model call per role that had criteria.
    roles = [r for r in fake.requests if str(r.get("system", "")).startswith("You help a patient prepare questions")]
    assert roles and "Questions for your doctor, by who can answer them" in (session.report_html or "")
    for r in roles:
        first = json.loads(r["messages"][0]["content"].split("<facts>", 1)[1].split("</facts>", 1)[0])["criteria"][0]
        assert f"What do my records say about this for {first['nct_id']}?" in (session.report_html or "")
    # Every phase's own prompt was used, and every tool call had arguments the schema accepts.
    used = {p for r in fake.requests if r not in roles for p in CONVERSATION_PHASES
            if f"# Phase: {p}" in r["system"][1]["text"]}
    assert used == set(CONVERSATION_PHASES)
    registry = build_registry()
    calls = [b for m in session.messages if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_use"]
    assert [c["name"] for c in calls if c["name"] == "update_session_phase"] == ["update_session_phase"] * 5
    assert [c["input"]["phase"] for c in calls if c["name"] == "update_session_phase"] == list(CONVERSATION_PHASES[1:])
    for c in calls:  # raises when the arguments break the tool's model
        registry.tools[c["name"]].arguments.model_validate(c["input"])
    results = [b for m in session.messages if m["role"] == "user" and isinstance(m["content"], list)
               for b in m["content"] if b["type"] == "tool_result"]
    assert len(results) == len(calls) and not any(r.get("is_error") for r in results)
    texts = [m.markdown[0].value for m in at.chat_message if m.markdown]
    assert texts[-1] == inert.chat_md("Your report is ready. It covers the two trials you chose.")
    assert any(b.label == "Download report (HTML)" for b in at.get("download_button"))
    assert SessionStore(db).load(session.id) == session
    assert at.query_params["session"] == session.id


def _fill_guided_form(at: AppTest) -> None:
    at.text_input(key="g_diagnosis").set_value("type 2 diabetes")
    at.number_input(key="g_age").set_value(55)
    at.radio(key="g_sex").set_value("female")
    at.text_input(key="g_location").set_value("Houston, TX")
    at.number_input(key="g_radius").set_value(100.0)
    at.selectbox(key="g_activity").set_value(ACTIVE_LIGHT_WORK)
    at.text_input(key="g_treatments").set_value("metformin, insulin")


def _click(at: AppTest, key: str) -> AppTest:
    next(b for b in at.button if b.key == key).click()
    return at.run()


def _guided_to_report(at: AppTest) -> AssistantSession:
    at.run()
    _ok(at)
    assert "Guided mode (no API key)" in at.info[0].value
    _fill_guided_form(at)
    next(b for b in at.button if b.label == "Save my answers and continue").click()
    at.run()
    _ok(at)
    session: AssistantSession = at.session_state["asst_session"]
    assert session.phase == "search"
    assert at.session_state["filters"] == Filters(condition="type 2 diabetes", near="Houston, TX", radius=100.0,
                                                  age=55.0, sex="FEMALE")
    _click(at, "g_search")
    _ok(at)
    assert session.phase == "matching"
    _click(at, "g_match")
    _ok(at)
    assert session.phase == "selection"
    picks = [c for c in at.checkbox if c.key and c.key.startswith("asst_pick_")]
    assert len(picks) == len(session.matched_trials) >= 5
    # Every card whose open status looks stale carries the mark on the page, and only those.
    stale = [m["status_note"] for m in session.matched_trials if m.get("status_note")]
    assert sorted(w.value for w in at.warning if w.value.startswith("Status may be out of date")) == sorted(stale)
    picks[1].check()
    at.run()
    _click(at, "asst_select")
    _ok(at)
    assert session.phase == "report"
    _click(at, "g_report")
    _ok(at)
    return session


def test_assistant_page_guided_mode_end_to_end(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    at = AppTest.from_file(PAGE, default_timeout=240)

    session = _guided_to_report(at)

    assert session.phase == "followup"
    chosen = session.selected_nct_ids
    assert len(chosen) == 1 and set(NCT_RE.findall(session.report_html or "")) == set(chosen)
    assert [b.label for b in at.get("download_button")] == ["Download report (HTML)", "Download this message"]
    # A draft to the chosen trial's team, from the answers and the trial's open questions; in the report too.
    [draft] = [t for t in at.text_area if t.label == "Your message"]
    assert draft.value.startswith("Dear study team,\n\nI am a 55-year-old woman with type 2 diabetes, living near "
                                  "Houston, TX. I found your trial " + chosen[0])
    assert "A message to the study team" in (session.report_html or "")
    assert "I am a 55-year-old woman with type 2 diabetes" in (session.report_html or "")
    # The report shown on the page groups its questions by who can answer them, the diabetes doctor first.
    assert "Questions for your doctor, by who can answer them" in (session.report_html or "")
    assert "<h3>Your endocrinologist (diagnosis, stage, treatments)</h3>" in (session.report_html or "")
    assert f"{chosen[0]} — the trial as a whole: Given " in (session.report_html or "")
    _click(at, "asst_pdf_make")
    _ok(at)
    assert [b.label for b in at.get("download_button")] == ["Download report (HTML)", "Download report (PDF)",
                                                             "Download this message"]
    assert at.session_state["asst_pdf"].startswith(b"%PDF-")
    assert [e.role for e in session.chat_log()] == ["user", "assistant"] * 5
    assert len(at.chat_input) == 0


def resume_child(token: str) -> None:
    """Run in a fresh Python process: open the page with only the session link and print what it shows."""
    at = AppTest.from_file(PAGE, default_timeout=240)
    at.query_params["session"] = token
    at.run()
    session: AssistantSession = at.session_state["asst_session"]
    out = {
        "exceptions": [e.value for e in at.exception], "errors": [e.value for e in at.error],
        "session": session.to_json(), "chat": [m.markdown[0].value for m in at.chat_message],
        "profile_shown": any("- " + inert.md_line("Diagnosis: type 2 diabetes") in m.value for m in at.markdown),
        "steps_shown": any("✓ Report" in m.value and "Follow-up" in m.value for m in at.markdown),
        "filters": at.session_state["filters"].query_string(), "report_buttons": [b.label for b in at.get("download_button")],
    }
    print("RESULT " + json.dumps(out))


def test_assistant_page_resumes_after_restart(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    first = AppTest.from_file(PAGE, default_timeout=240)
    before = _guided_to_report(first)
    token = first.query_params["session"]
    shown_before = [m.markdown[0].value for m in first.chat_message]

    # Another server process: no page state and no database handles, only the link.
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    proc = subprocess.run([sys.executable, "-c", f"from tests.test_assistant_page import resume_child; "
                                                 f"resume_child({token!r})"],
                          cwd=PROJECT, env=env, capture_output=True, text=True, timeout=600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    out = json.loads(lines[-1][len("RESULT "):])

    assert (out["exceptions"], out["errors"]) == ([], [])
    assert AssistantSession.from_json(out["session"]) == before
    assert out["chat"] == shown_before
    assert (out["profile_shown"], out["steps_shown"]) == (True, True)
    assert out["filters"] == Filters(condition="type 2 diabetes", near="Houston, TX", radius=100.0, age=55.0,
                                     sex="FEMALE").query_string()
    assert out["report_buttons"] == ["Download report (HTML)", "Download this message"]


def test_assistant_page_bad_or_forgotten_links_open_fresh(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    store = SessionStore(db)
    kept = AssistantSession()
    kept.patient_profile = {"diagnosis": "asthma"}
    store.save(kept)
    broken = AssistantSession().id
    db.execute("INSERT INTO app.sessions (token, data, expires_at) VALUES (:t, CAST(:d AS jsonb), now() + interval '1 day')",
               {"t": storage_key(broken), "d": json.dumps({"version": 1})})

    at = AppTest.from_file(PAGE, default_timeout=240)
    at.query_params["session"] = broken
    at.run()

    assert [w.value for w in at.warning] == [
        "The saved session behind that link could not be read (its stored data is damaged), so a new session was "
        "started. Other sessions are not affected."]
    assert at.session_state["asst_session"].id not in (broken, kept.id)
    assert "session" not in at.query_params
    assert store.load(kept.id) == kept

    other = AppTest.from_file(PAGE, default_timeout=240)
    other.query_params["session"] = kept.id
    other.run()
    assert other.session_state["asst_session"] == kept
    _click(other, "asst_forget")
    assert store.load(kept.id) is None
    assert [w.value for w in other.warning] == [
        "The session was forgotten: its answers, matches, report and uploaded health records are deleted from the server."]
    assert other.session_state["asst_session"].id != kept.id


def test_assistant_page_dashboard_filters_seed_the_form(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    at = AppTest.from_file(PAGE, default_timeout=240)
    at.session_state["filters"] = Filters(condition="asthma", age=40.0, sex="FEMALE", near="Boston, MA", radius=30.0)
    at.session_state["url_read"] = True
    at.run()

    _click(at, "asst_seed")

    _ok(at)
    session: AssistantSession = at.session_state["asst_session"]
    assert {k: v for k, v in session.intake_answers.items()} == {
        "dashboard_condition": "asthma", "dashboard_age": 40, "dashboard_sex": "female",
        "dashboard_near": "Boston, MA",
        "dashboard_radius": 30.0, "dashboard_radius_unit": "mi"}
    assert (at.text_input(key="g_diagnosis").value, at.number_input(key="g_age").value, at.radio(key="g_sex").value,
            at.text_input(key="g_location").value, at.number_input(key="g_radius").value) == (
        "asthma", 40, "female", "Boston, MA", 30.0)
    assert SessionStore(db).load(session.id) == session


def test_assistant_page_message_limit_stops_before_the_model(
    db: Any, fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uuid

    from services import limits
    from services.data import runtime

    # One message per browser per 10 minutes, counted in PostgreSQL under a kind of its own (no other test's
    # messages count against it).
    monkeypatch.setattr(limits, "_visitor_limiter", limits.SharedLimiter(
        runtime.get_app_db, f"assistant_message_{uuid.uuid4().hex[:8]}", 1, 60, 500, 600))
    fake.add_text("Hello, how can I help?")
    at = AppTest.from_file(PAGE, default_timeout=240).run()

    _chat(at, "Hi")
    _chat(at, "Are you there?")

    assert len(fake.requests) == 1
    assert [e.value for e in at.error][0].startswith("You have sent 1 messages in the last 10 minutes")
    session: AssistantSession = at.session_state["asst_session"]
    assert [e.text for e in session.chat_log()] == ["Hi", "Hello, how can I help?"]


def test_assistant_page_view_model_shapes() -> None:
    from services.assistant import view_model as vm

    session = AssistantSession(phase="matching")
    assert [(s.title, s.state) for s in vm.phase_steps(session)] == [
        ("About you", "done"), ("Search", "done"), ("Check eligibility", "current"), ("Choose trials", "todo"),
        ("Report", "todo"), ("Follow-up", "todo")]
    assert vm.filter_changes({"condition": " NSCLC ", "age": 62, "sex": "MALE", "near": "Lompoc, California",
                              "radius": 200, "radius_unit": "km", "phase": ["PHASE2"], "other": 1}) == {
        "condition": "NSCLC", "age": 62.0, "sex": "MALE", "near": "Lompoc, California", "radius": 200.0, "unit": "km",
        "phase": ("PHASE2",)}
    assert [vm.compact_number(n) for n in (999, 1000, 7_949, 2_500_000)] == ["999", "1k", "7.9k", "2.5M"]
    session.messages = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "One moment."},
                                          {"type": "tool_use", "id": "t1", "name": "emit_status", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "{}"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
    ]
    assert vm.display_log(session) == [("user", "Hi"), ("assistant", "One moment.\n\nDone.")]
    session.matched_trials = [{"nct_id": "NCT00000001", "fit_score": 80, "verdict": "eligible", "summary": "s"}]
    session.candidates = {"NCT00000001": {"title": "A trial", "status": "RECRUITING", "phases": ["NA"]}}
    cards, selectable = vm.cards_to_show(session)
    assert (selectable, [vm.card_view(c) for c in cards]) == (True, [{
        "nct_id": "NCT00000001", "title": "A trial", "url": "https://clinicaltrials.gov/study/NCT00000001", "fit": 80,
        "verdict": "Looks eligible", "colour": "#1a7f37", "status": "Recruiting", "status_code": "RECRUITING", "last_update": None, "phases": "No drug phase",
        "summary": "s", "nearest": "", "band": "", "fit_explanation": "", "status_note": "", "distance_note": "",
        "criteria_note": ""}])
    session.matched_trials[0].update(fit_band="needs_information", fit_explanation="Why.", distance_note="Far.",
                                     status_note="Status may be out of date — last updated May 1, 2023.",
                                     criteria_text="missing from this copy")
    view = vm.card_view(vm.cards_to_show(session)[0][0])
    assert (view["band"], view["fit_explanation"], view["distance_note"], view["status_note"]) == (
        "Needs information", "Why.", "Far.", "Status may be out of date — last updated May 1, 2023.")
    assert view["criteria_note"].startswith("The eligibility criteria text is missing from this app's copy")
    session.phase = "followup"
    assert vm.cards_to_show(session) == ([], False)


def test_assistant_page_card_says_a_site_distance_in_words() -> None:
    """A card's nearest site reads as the report's does: never 'about 0 miles' or 'about 1 miles'."""
    from services.assistant import view_model as vm

    site = {"facility": "Harbor Cancer Center", "city": "Boston", "state": "MA"}
    nearest = {miles: vm.card_view({"nct_id": "NCT00000001", "nearest_site": dict(site, distance_miles=miles)})["nearest"]
               for miles in (0.0, 0.7, 1.0, 2.7, 1455.3)}
    assert nearest == {m: "Harbor Cancer Center, Boston, MA — " + words for m, words in (
        (0.0, "less than a mile away"), (0.7, "less than a mile away"), (1.0, "about 1 mile away"),
        (2.7, "about 3 miles away"), (1455.3, "about 1,455 miles away"))}


def test_assistant_page_map_tooltips_hold_record_text_as_written_and_distance_in_words() -> None:
    """Streamlit's map escapes each value it fills into the tooltip's HTML template (checked in test_feasibility), so
    a site's name, city and country are kept as written (escaping them here too showed '&amp;'), and the distance is
    worded as on the cards ('about 1 mile away', not '1 miles away')."""
    from services.assistant import view_model as vm
    from tests.memory_backend import TRIALS, MemoryBackend

    trial = dict(TRIALS[0], sites=[{"facility": "<img src=x onerror=alert(1)> & Women's", "city": "<b>Town</b>",
                                    "state": "MA", "country": "<i>X</i>", "status": "RECRUITING",
                                    "latitude": 42.36, "longitude": -71.06}])
    row = vm.site_points(MemoryBackend(trials=[trial]), [trial["nct_id"]], (42.36, -71.06)).iloc[0]
    assert row["t_sub"] == "<img src=x onerror=alert(1)> & Women's, <b>Town</b>, MA"
    assert row["t_l1"] == "<i>X</i>" and row["t_title"] == trial["nct_id"] and row["t_l2"] == "less than a mile away"
    far = vm.site_points(MemoryBackend(trials=[trial]), [trial["nct_id"]], (42.36 + 1 / 69.1, -71.06)).iloc[0]
    assert far["t_l2"] == "about 1 mile away"


def test_assistant_page_new_session_clears_the_form(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    at = AppTest.from_file(PAGE, default_timeout=240).run()
    first = at.session_state["asst_session"].id
    at.text_input(key="g_diagnosis").set_value("psoriasis")
    at.run()

    _click(at, "asst_new")

    _ok(at)
    assert at.text_input(key="g_diagnosis").value == ""
    assert at.session_state["asst_session"].id != first


def test_assistant_page_side_panel_says_a_travel_limit_in_whole_miles() -> None:
    """A radius the dashboard set in km is saved in miles: the side panel read 'Travel up to (miles): 62.1371' where
    the cards and the report say 62 miles, and 'Travel up to (miles): 1' for one mile."""
    from services.assistant import view_model as vm

    session = AssistantSession()
    session.patient_profile.update(diagnosis="asthma", age=54.5, travel_radius_miles=100 / 1.609344)
    assert vm.profile_lines(session) == ["Diagnosis: asthma", "Age: 54.5", "Travel up to: 62 miles"]
    session.patient_profile["travel_radius_miles"] = 1.0
    assert vm.profile_lines(session)[-1] == "Travel up to: 1 mile"


def test_assistant_form_defaults_travel_limit_in_whole_miles_with_a_km_dashboard() -> None:
    """A 100 km radius on the dashboard started the guided form's travel field at 62.137 miles (unrounded), and with
    km as the unit but no place, the form's default of 100 miles was divided as if it were km (62.137 again)."""
    from services.assistant import view_model as vm

    with_place = AssistantSession()
    with_place.seed_from_dashboard({"near": "Boston, MA", "radius": 100.0, "radius_unit": "km"})
    assert vm.form_defaults(with_place, Filters(near="Boston, MA", radius=100.0, unit="km"))["travel_radius_miles"] == 62.0
    no_place = AssistantSession()
    assert vm.form_defaults(no_place, Filters(unit="km"))["travel_radius_miles"] == 100.0
    assert vm.form_defaults(no_place, Filters(near="Boston, MA", radius=1.0, unit="km"))["travel_radius_miles"] == 1.0
    no_place.patient_profile["travel_radius_miles"] = 37.5  # the patient's own answer stays as given
    assert vm.form_defaults(no_place, Filters(near="Boston, MA", radius=100.0, unit="km"))["travel_radius_miles"] == 37.5


def test_assistant_page_guided_form_shows_whole_miles_without_decimals(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # The travel distance read "100.00" miles; a distance typed with decimals keeps them.
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    at = AppTest.from_file(PAGE, default_timeout=240).run()
    _ok(at)
    radius = at.number_input(key="g_radius")
    assert (radius.format % 100.0, radius.format % 12.5) == ("100", "12.5")
    assert radius.format.startswith("%.")  # a bare %g prints 62.13711922373339 (100 km in miles) in the browser
