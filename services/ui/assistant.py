"""The Assistant page's Streamlit glue: the session's lifecycle (state, ?session= link, store), the message limit,
and running one model turn or guided step with live progress. The page itself only lays out and renders."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from services import healthdata, inert, limits, report
from services.assistant import AssistantSession, Callbacks, Orchestrator, records
from services.assistant import view_model as vm
from services.assistant.guided import GuidedAssistant, GuidedError, StepResult
from services.assistant.orchestrator import UserInput
from services.assistant.records import HealthRecordStore
from services.assistant.store import SessionStore
from services.errors import AssistantUnavailable, TrialLandscapeError
from services.trials import plural
from services.ui import doors, gate, health
from services.ui import state as ui_state

FORM_KEY_PREFIXES = ("g_", "pick_", "other_", "asst_pick_", "asst_pdf", "health_")


def clear_form_state() -> None:
    """Forget answers typed into this page's forms and picks (they belong to the session being left)."""
    for key in [k for k in st.session_state.keys() if str(k).startswith(FORM_KEY_PREFIXES)]:  # noqa: SIM118
        del st.session_state[key]


def start_fresh() -> None:
    """A new, empty session with a clean page."""
    clear_form_state()
    st.session_state["asst_session"], st.session_state["asst_events"], st.session_state["asst_error"], st.session_state["asst_warnings"] = AssistantSession(), [], None, []
    st.session_state["asst_flagged"] = []
    if "session" in st.query_params:
        del st.query_params["session"]


def open_session() -> AssistantSession:
    """This browser session's assistant session: kept in state, else opened from the ?session= link."""
    token = st.query_params.get("session")
    current = st.session_state.get("asst_session")
    if current is not None and (not token or token == current.id):
        return current  # type: ignore[no-any-return]
    with health.database_errors():
        opened = SessionStore().open(token)
    if current is not None:
        clear_form_state()
    st.session_state["asst_session"], st.session_state["asst_notice"], st.session_state["asst_events"] = opened.session, opened.notice, []
    if opened.resumed and opened.session.filters:
        ui_state.update_filters(from_patient=True, **vm.filter_changes(opened.session.filters))
    elif not opened.resumed and "session" in st.query_params:
        del st.query_params["session"]
    return opened.session


def forget(session: AssistantSession) -> None:
    """Delete the session from the server and start a new one, saying so."""
    with health.database_errors():
        SessionStore().delete(session.id)
    doors.forget_session_media()  # the report's download URLs answer 404 from now on
    start_fresh()
    st.session_state["asst_notice"] = ("The session was forgotten: its answers, matches, report and uploaded health "
                                       "records are deleted from the server.")


def save(session: AssistantSession) -> None:
    """Store the session and put its link in the URL."""
    with health.database_errors():
        SessionStore().save(session)
    st.query_params["session"] = session.id


def apply_events(events: list[dict[str, Any]]) -> None:
    """Keep the turn's UI events for the next run and copy filter changes to the shared dashboard filters."""
    st.session_state["asst_events"] = events
    for event in events:
        if event.get("type") == "filters":
            ui_state.update_filters(from_patient=True, **vm.filter_changes(event["filters"]))


def _progress(status: Any) -> Callable[[str], None]:
    """A progress callback that shows each message as the status box's label and as a line inside it."""

    def on_status(message: str) -> None:
        status.update(label=inert.md_line(message))
        status.write(inert.md_line(message))

    return on_status


def model_turn(session: AssistantSession, user_input: UserInput, shown: str) -> None:
    """Run one model turn with streamed text and progress, save, then redraw from the session."""
    # Counted per browser and network address in the database: a new session or another replica shares it.
    decision = limits.visitor_limiter().try_acquire(gate.limit_visitor())
    if not decision.allowed:
        st.session_state["asst_error"] = limits.visitor_limiter().message(decision)
        st.rerun()
    with st.chat_message("user"):
        st.markdown(inert.md(shown))
    with st.chat_message("assistant"):
        status = st.status("Thinking…", expanded=False)
        held: list[str] = []
        told = [0]

        def on_text(delta: str) -> None:
            # Check-then-show: the answer is held until the turn's checks (grounding of every NCT id, claims
            # without a lookup, missing citations) have run on all of it; meanwhile the status line counts it.
            held.append(delta)
            words = len("".join(held).split())
            if words - told[0] >= 5:
                told[0] = words
                status.update(label=f"Writing the answer… {words:,} words so far (shown once it is checked)")

        try:
            llm = vm.gated_model()
        except AssistantUnavailable as exc:
            st.session_state["asst_error"] = f"{exc} {exc.hint}"
            st.rerun()
        callbacks = Callbacks(on_text, _progress(status), None)
        turn = Orchestrator(llm, vm.backend(), callbacks).run_turn(session, user_input)
        status.update(label="Checked", state="complete")
    save(session)
    apply_events(turn.events)
    st.session_state["asst_error"] = turn.error
    st.session_state["asst_warnings"] = [w.message for w in turn.warnings]
    st.session_state["asst_flagged"] = turn.flagged  # marked in the answer's bubble as "Not checked"
    st.rerun()


def guided_step(session: AssistantSession, action: Callable[[GuidedAssistant], StepResult]) -> None:
    """Run one guided step with progress messages, save, then redraw."""
    with st.status("Working…", expanded=True) as status:
        helper = GuidedAssistant(vm.backend(), on_status=_progress(status),
                                 labs=lambda token: records.lab_values(HealthRecordStore().load(token)))
        try:
            with health.database_errors():
                result = action(helper)
        except GuidedError as exc:
            st.session_state["asst_error"] = str(exc)
            st.rerun()
        except TrialLandscapeError as exc:
            st.session_state["asst_error"] = f"{exc} {exc.hint}".strip()
            st.rerun()
        status.update(label="Done", state="complete")
    save(session)
    apply_events(result.events)
    st.session_state["asst_error"] = None
    st.rerun()


def ready_pdf(report_html: str) -> bytes | None:
    """The PDF made from this very report in this browser session, if any (a changed report needs a new one)."""
    made_for = st.session_state.get("asst_pdf_for")
    return st.session_state.get("asst_pdf") if made_for == vm.report_digest(report_html) else None


def make_pdf(report_html: str) -> None:
    """Print the report to PDF through headless Chromium, keep it for the download button, then redraw."""
    with st.spinner("Printing the report to PDF…"):
        try:
            st.session_state["asst_pdf"] = report.render_pdf(report_html)
            st.session_state["asst_pdf_for"] = vm.report_digest(report_html)
        except TrialLandscapeError as exc:
            st.session_state["asst_error"] = f"The PDF could not be made: {exc}"
    st.rerun()


def contact_messages(session: AssistantSession) -> None:
    """For each trial in the report: whom to write to and a draft to edit, copy or download (nothing is sent)."""
    if not session.report_html:
        return
    key = f"contact_drafts_{vm.report_digest(session.report_html)}"
    if key not in st.session_state:
        with health.database_errors():
            st.session_state[key] = vm.contact_drafts(session)
    drafts = st.session_state[key]
    if not drafts:
        return
    st.subheader("Messages to the study teams")
    st.caption("Drafts written from your answers and each trial's open questions. This app sends nothing: change a "
               "draft as you like, then copy or download it and send it yourself.")
    for d in drafts:
        with st.expander(f"{d['nct_id']} — {inert.md_line(d['title'][:90])}"):
            if d["contact_source"] == "no contact in our copy of the registry":
                st.markdown(f"Write to the study team through the contacts on "
                            f"{inert.ctgov_link(d['nct_id'], 'its ClinicalTrials.gov page')} (our copy of the "
                            "registry has no contact names, e-mails or phone numbers).")
            else:
                st.markdown(f"Write to **{inert.md_line(d['contact_who'])}** — "
                            f"{inert.md_line('; '.join(d['contact_ways']))} ({inert.md_line(d['contact_source'])}).")
            message = st.text_area("Your message", d["message"], height=320, max_chars=4000,
                                   key=f"{key}_{d['nct_id']}")
            st.download_button("Download this message", message, file_name=f"message-{d['nct_id']}.txt",
                               mime="text/plain", key=f"{key}_dl_{d['nct_id']}")


# --- Health records (guided mode) -------------------------------------------------------------------------------

HEALTH_UPLOAD_MB = 50  # the server's own limit (.streamlit/config.toml server.maxUploadSize) refuses more anyway
_SOURCE_SHOWN = {"apple-health": "Apple Health", "csv": "CSV"}


def _health_observations(session: AssistantSession) -> list[healthdata.Observation]:
    """The session's stored records, read once per change (kept in state under the session's token)."""
    held = st.session_state.get("health_rows")
    if held is None or held[0] != session.id:
        with health.database_errors():
            held = (session.id, HealthRecordStore().load(session.id))
        st.session_state["health_rows"] = held
    return held[1]  # type: ignore[no-any-return]


def _store_upload(session: AssistantSession, upload: Any) -> None:
    """Read one uploaded file and store what it gave, all or nothing; the outcome goes to the next run's messages."""
    st.session_state["health_done"] = upload.file_id
    st.session_state.pop("health_rows", None)
    outcome: dict[str, Any] = {"ok": "", "error": "", "problems": [], "notes": []}
    st.session_state["health_outcome"] = outcome
    if upload.size > HEALTH_UPLOAD_MB * 1024 * 1024:
        outcome["error"] = (f"{upload.name} is {upload.size / 1e6:.0f} MB, over the {HEALTH_UPLOAD_MB} MB limit. "
                            "Upload export.zip (much smaller than export.xml) or a CSV of the results you need.")
        return
    try:
        with st.spinner("Reading your health records…"):
            parsed = healthdata.read_upload(upload.name, upload)
    except healthdata.HealthDataError as exc:
        outcome["error"] = str(exc) if "nothing was stored" in str(exc) else f"{exc} Nothing from {upload.name} was stored."
        return
    if not parsed.observations:
        outcome["error"] = (f"Nothing in {upload.name} is a lab, vital or step count this app recognises, so nothing "
                            "was stored.")
        outcome["problems"] = parsed.problems[: healthdata.SHOWN_PROBLEMS]
        return
    try:
        stored = HealthRecordStore().save(session, parsed)
    except TrialLandscapeError as exc:  # the database's own error, never the values
        outcome["error"] = (f"Your records could not be stored ({exc}); nothing was stored. Remove the file above (×) "
                            "and upload it again in a moment.")
        return
    st.query_params["session"] = session.id
    outcome["ok"] = (f"Stored {stored:,} value{'s' if stored != 1 else ''} from {upload.name} (they replace "
                     f"your earlier {_SOURCE_SHOWN[parsed.source]} upload, if any)." + (f" {len(parsed.problems):,} row{'s were' if len(parsed.problems) != 1 else ' was'} "
                                               "not stored; see below." if parsed.problems else ""))
    outcome["problems"] = parsed.problems[: healthdata.SHOWN_PROBLEMS]
    if len(parsed.problems) > healthdata.SHOWN_PROBLEMS:
        outcome["problems"].append(f"… and {len(parsed.problems) - healthdata.SHOWN_PROBLEMS:,} more.")
    outcome["notes"] = parsed.notes


def health_records(session: AssistantSession) -> None:
    """The optional health-records section: upload, template, what is stored, an activity estimate, removal."""
    st.subheader("Health records (optional)")
    st.caption("Upload an Apple Health export (export.zip, or the export.xml inside it) or a CSV of lab results and "
               "vitals (columns date, name, value, unit). Recognised: creatinine, eGFR, ALT, AST, total bilirubin, "
               "haemoglobin, ANC, platelets, HbA1c, LDL, heart rate, blood pressure, weight, height, BMI, glucose, "
               "oxygen saturation, temperature and daily steps. They are kept only with this session, never in a "
               "link or a log, and deleted with “Forget this session” or “Remove my health records”.")
    upload = st.file_uploader("Apple Health export or lab CSV", type=["zip", "xml", "csv"], key="health_upload",
                              max_upload_size=HEALTH_UPLOAD_MB,
                              help=f"Up to {HEALTH_UPLOAD_MB} MB; export.zip is far smaller than the export.xml inside "
                                   "it. In the Health app: your picture → Export All Health Data gives export.zip.")
    if upload is not None and upload.file_id != st.session_state.get("health_done"):
        _store_upload(session, upload)
    st.download_button("Download the CSV template", healthdata.csv_template(), file_name="health-records-template.csv",
                       mime="text/csv", key="health_template",
                       help="One row per result: date as YYYY-MM-DD, the test's name, the number, its unit. Rows "
                            "left without a value are skipped.")
    outcome = st.session_state.get("health_outcome")
    if outcome:
        if outcome["error"]:
            st.error(inert.md(outcome["error"]), icon="⚠️")
        if outcome["ok"]:
            st.success(inert.md(outcome["ok"]), icon="✅")
        if outcome["problems"]:
            st.warning(inert.md("Not stored (fix these rows and upload the file again):"), icon="✏️")
            st.text("\n".join(outcome["problems"]))
        for note in outcome["notes"]:
            st.caption(inert.md(note))
    observations = _health_observations(session)
    if not observations:
        return
    order = {"lab": 0, "vital": 1, "steps": 2}
    rows = sorted(observations, key=lambda o: (order[o.kind], -o.observed_on.toordinal(), o.key))
    st.dataframe(
        [{"Date": o.observed_on.isoformat(), "Test": healthdata.BY_KEY[o.key].name, "As written": o.name,
          "Value": o.value, "Unit": o.unit, "Standard value": o.std_value, "Standard unit": o.std_unit,
          "Source": _SOURCE_SHOWN.get(o.source, o.source)} for o in rows[:5000]],
        hide_index=True, key="health_table", width="stretch", height=280)
    labs = len(healthdata.latest_labs(observations))
    st.caption(plural(len(observations), "stored value") + (" (the first 5,000 shown)" if len(rows) > 5000 else "")
               + (f". When you check eligibility, the latest value of {'each of ' if labs != 1 else ''}your "
                  f"{plural(labs, 'lab test')} is compared with each trial's lab limits, and the reason names the "
                  "value and its date." if labs else "."))
    estimate = healthdata.activity_estimate(observations)
    if estimate:
        st.info(inert.md(estimate), icon="🚶")
    if st.button("Remove my health records", key="health_remove"):
        with health.database_errors():
            removed = HealthRecordStore().delete(session.id)
        st.session_state.pop("health_rows", None)
        st.session_state["health_outcome"] = {"ok": f"Removed {plural(removed, 'stored value')} from this session.",
                                              "error": "", "problems": [], "notes": []}
        st.rerun()
