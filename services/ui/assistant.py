"""The Assistant page's Streamlit glue: the session's lifecycle (state, ?session= link, store), the message limit,
and running one model turn or guided step with live progress. The page itself only lays out and renders."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from services import inert, limits, report
from services.assistant import AssistantSession, Callbacks, Orchestrator
from services.assistant import view_model as vm
from services.assistant.guided import GuidedAssistant, GuidedError, StepResult
from services.assistant.orchestrator import UserInput
from services.assistant.store import SessionStore
from services.errors import AssistantUnavailable, TrialLandscapeError
from services.ui import gate, health
from services.ui import state as ui_state

FORM_KEY_PREFIXES = ("g_", "pick_", "other_", "asst_pick_", "asst_pdf")


def clear_form_state() -> None:
    """Forget answers typed into this page's forms and picks (they belong to the session being left)."""
    for key in [k for k in st.session_state.keys() if str(k).startswith(FORM_KEY_PREFIXES)]:  # noqa: SIM118
        del st.session_state[key]


def start_fresh() -> None:
    """A new, empty session with a clean page."""
    clear_form_state()
    st.session_state["asst_session"], st.session_state["asst_events"], st.session_state["asst_error"], st.session_state["asst_warnings"] = AssistantSession(), [], None, []
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
    start_fresh()
    st.session_state["asst_notice"] = ("The session was forgotten: its answers, matches and report are deleted from "
                                       "the server.")


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


def model_turn(session: AssistantSession, user_input: UserInput, shown: str) -> None:
    """Run one model turn with streamed text and progress, save, then redraw from the session."""
    # Counted per browser and network address in the database: a new session or another replica shares it.
    decision = limits.visitor_limiter().try_acquire(gate.visitor())
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

        def on_status(message: str) -> None:
            status.update(label=inert.md_line(message))
            status.write(inert.md_line(message))

        try:
            llm = vm.gated_model()
        except AssistantUnavailable as exc:
            st.session_state["asst_error"] = f"{exc} {exc.hint}"
            st.rerun()
        turn = Orchestrator(llm, vm.backend_for(session), Callbacks(on_text, on_status, None)).run_turn(session, user_input)
        status.update(label="Checked", state="complete")
    save(session)
    apply_events(turn.events)
    st.session_state["asst_error"] = turn.error
    st.session_state["asst_warnings"] = [w.message for w in turn.warnings]
    st.rerun()


def guided_step(session: AssistantSession, action: Callable[[GuidedAssistant], StepResult]) -> None:
    """Run one guided step with progress messages, save, then redraw."""
    with st.status("Working…", expanded=True) as status:

        def on_status(message: str) -> None:
            status.update(label=inert.md_line(message))
            status.write(inert.md_line(message))

        helper = GuidedAssistant(vm.backend_for(session), on_status=on_status)
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
