"""Assistant page: a patient interview, trial search, eligibility check, choice of trials and a report to print."""

import streamlit as st

from services import inert, report
from services.assistant import ACTIVITY_LEVELS, TrialSelection, WidgetAnswer
from services.assistant import view_model as vm
from services.assistant.guided import (
    GUIDED_LABEL,
    TRIAL_TYPES,
    IntakeForm,
    split_items,
)
from services.data.normalize import PHASES, label
from services.llm import MODEL_CHOICES, api_key_from_env
from services.ui import assistant as chat
from services.ui import health
from services.ui import live as live_ui
from services.ui import state as ui_state

health.ensure_database()
f = ui_state.page_setup("Assistant")
guided = api_key_from_env() is None
S = st.session_state


session = chat.open_session()
events = S.get("asst_events", [])

st.title("💬 Trial assistant")
if guided:
    st.info(f"**{GUIDED_LABEL}.** No Anthropic API key is set, so this page works with forms and fixed rules "
            "instead of a chat: the same six steps, the same searches, a rule-based eligibility check and the "
            "same report. Set ANTHROPIC_API_KEY to talk with the assistant instead.", icon="🧭")
else:
    st.caption("Tell the assistant about your situation. It searches this app's copy of ClinicalTrials.gov, checks "
               "each trial's criteria against your answers and writes a report to take to your doctor.")
st.markdown(vm.phase_html(vm.phase_steps(session)), unsafe_allow_html=True)
st.caption("Not medical advice. Your doctor and each trial's team decide whether a trial suits you.")

if S.get("asst_notice"):
    st.warning(S.pop("asst_notice"), icon="🔗")  # our own sentences
if S.get("asst_error"):
    st.error(inert.md(S["asst_error"]), icon="⚠️")
log = vm.display_log(session)
# The latest turn's check results stand in its answer's bubble, above the text (check-then-show).
last_answer = max((i for i, (role, _) in enumerate(log) if role == "assistant"), default=None)
if last_answer is None:
    for warning in S.get("asst_warnings") or []:
        st.warning(inert.md(warning), icon="🔎")

main, side = st.columns([3, 1.15], gap="large")

with side:
    st.subheader("Your session")
    lines = vm.profile_lines(session)
    st.markdown("\n".join(f"- {inert.md_line(line)}" for line in lines) if lines else "_Nothing saved about you yet._")
    use = vm.usage(session)
    if not guided:
        c1, c2 = st.columns(2)
        c1.metric("Model calls", f"{use.model_calls:,}")
        c2.metric("Context", f"~{vm.compact_number(use.context_tokens)}",
                  help=f"Estimated tokens of the conversation sent with the next call. Trimming starts at about "
                       f"{use.trim_at_tokens:,} tokens{'' if use.trimming else ' (switched off)'}.")
        st.caption(f"Tokens used so far: {use.input_tokens:,} in · {use.output_tokens:,} out · "
                   f"{use.cache_read_tokens:,} read from cache.")
        with st.expander("Settings"):
            model = st.selectbox("Model", MODEL_CHOICES, index=MODEL_CHOICES.index(session.settings.model)
                                 if session.settings.model in MODEL_CHOICES else 0, key="asst_model")
            trimming = st.toggle("Shorten long conversations", value=session.settings.trimming, key="asst_trim",
                                 help="Leaves out the oldest messages when the conversation gets long; your answers "
                                      "and results stay saved.")
            if (model, trimming) != (session.settings.model, session.settings.trimming):
                session.settings.model, session.settings.trimming = model, trimming
                if session.messages:
                    chat.save(session)
    seed = vm.dashboard_seed(f)
    if seed and session.phase == "intake" and not session.patient_profile:
        if st.button("Start from my dashboard filters", key="asst_seed", width="stretch",
                     help="Tells the assistant the condition, age, sex and place set in the sidebar filters."):
            session.seed_from_dashboard(seed)
            chat.save(session)
            st.rerun()
    if st.query_params.get("session") == session.id:
        base = str(st.context.url or "").split("?", 1)[0]
        st.caption("Link to come back to this session (keep it private; it opens your answers):")
        st.code(f"{base}?session={session.id}", language=None, wrap_lines=True)
    if st.button("New session", key="asst_new", width="stretch"):
        chat.start_fresh()
        st.rerun()
    if st.button("Forget this session", key="asst_forget", width="stretch",
                 help="Deletes everything saved in this session from the server."):
        chat.forget(session)
        st.rerun()

with main:
    if not guided:
        with st.chat_message("assistant"):
            st.markdown("Hello! I can help you look for clinical trials and prepare questions for your doctor. "
                        "To start, what condition are you looking for trials for?")
    for i, (role, text) in enumerate(log):
        with st.chat_message(role):
            if i == last_answer:
                for warning in S.get("asst_warnings") or []:
                    st.warning(inert.md(warning), icon="🔎")
            # Model and patient text is shown literally; only NCT ids this session looked up become links.
            flagged = S.get("asst_flagged") or [] if i == last_answer else []
            st.markdown(inert.chat_md(text, session.seen_nct_ids, flagged) if role == "assistant"
                        else inert.md(text))

    widget = None if guided else vm.open_widget(session)
    if widget is not None:
        with st.form(f"widget_{widget['widget_id']}"):
            st.markdown(f"**{inert.md_line(widget['question'])}**")
            if widget["widget_type"] == "single_select":
                picked = st.radio("Choose one", widget["options"], index=None, key=f"pick_{widget['widget_id']}",
                                  format_func=inert.md_line)
                chosen = [picked] if picked else []
            else:
                chosen = st.multiselect("Choose all that apply", widget["options"], key=f"pick_{widget['widget_id']}")
            other = st.text_input("Something else (optional)", key=f"other_{widget['widget_id']}",
                                  max_chars=300) if widget.get("allow_other") else ""
            if st.form_submit_button("Send answer", type="primary"):
                answer = WidgetAnswer(widget["widget_id"], tuple(chosen), other or "")
                chat.model_turn(session, answer, "; ".join([*chosen, other] if other else chosen) or "(no answer)")

    if guided and session.phase == "intake":
        d = vm.form_defaults(session, f)
        with st.form("guided_intake"):
            st.subheader("About you")
            st.caption("Fields marked * are needed. Lists: separate items with commas.")
            c1, c2 = st.columns(2)
            diagnosis = c1.text_input("Diagnosis *", d["diagnosis"], max_chars=200, key="g_diagnosis",
                                      placeholder="e.g. type 2 diabetes, non-small cell lung cancer")
            stage = c2.text_input("Stage or grade", d["stage"], max_chars=100, key="g_stage")
            subtype = c1.text_input("Subtype", d["subtype"], max_chars=150, key="g_subtype",
                                    placeholder="e.g. adenocarcinoma, HER2-positive")
            biomarkers = c2.text_input("Biomarkers or genetic test results", d["biomarkers"], key="g_biomarkers",
                                       placeholder="e.g. EGFR negative, PD-L1 50%")
            treatments = st.text_input("Treatments so far", d["treatments"], key="g_treatments",
                                       placeholder="e.g. metformin, carboplatin, surgery")
            c1, c2, c3 = st.columns(3)
            age = c1.number_input("Age *", min_value=0, max_value=120, value=d["age"], step=1, key="g_age")
            sex = c2.radio("Sex *", ["female", "male"], index=["female", "male"].index(d["sex"]) if d["sex"] else None,
                           horizontal=True, key="g_sex", format_func=str.capitalize)
            radius = c3.number_input("How far can you travel? (miles)", min_value=1.0, max_value=12500.0,
                                     value=d["travel_radius_miles"], step=25.0, key="g_radius", format="%.6g",
                                     placeholder="any distance")
            location = st.text_input("Where do you live? *", d["location"], max_chars=200, key="g_location",
                                     placeholder="City and state or country, or a US ZIP code")
            options = list(ACTIVITY_LEVELS)  # each answer maps to an ECOG score
            activity = st.selectbox("How active are you day to day?", options, key="g_activity",
                                    index=options.index(d["activity_level"]) if d["activity_level"] in options else None,
                                    placeholder="Choose the closest description")
            c1, c2 = st.columns(2)
            types = c1.multiselect("Kinds of treatment you are open to", TRIAL_TYPES, d["trial_types"],
                                   key="g_types", format_func=str.capitalize)
            phases = c2.multiselect("Preferred trial phases", PHASES, d["preferred_phases"], key="g_phases",
                                    format_func=lambda p: label("phase", p))
            wanted = c1.text_input("A treatment you would like to try", d["interventions_of_interest"],
                                   max_chars=200, key="g_wanted", placeholder="optional")
            others = c2.text_input("Other health conditions", d["other_conditions"], key="g_others",
                                   placeholder="optional")
            notes = st.text_area("Anything else", d["notes"], max_chars=1500, key="g_notes")
            if st.form_submit_button("Save my answers and continue", type="primary"):
                form = IntakeForm(
                    diagnosis=diagnosis, stage=stage, subtype=subtype, biomarkers=split_items(biomarkers),
                    treatments=split_items(treatments), age=int(age) if age is not None else None, sex=sex,
                    location=location, travel_radius_miles=radius, activity_level=activity, trial_types=tuple(types),
                    preferred_phases=tuple(phases), interventions_of_interest=wanted,
                    other_conditions=split_items(others), notes=notes)
                chat.guided_step(session, lambda g: g.submit_intake(session, form))
    elif guided and session.phase == "search":
        c1, c2 = st.columns([1, 1])
        if c1.button("Search for trials", type="primary", key="g_search", width="stretch"):
            chat.guided_step(session, lambda g: g.run_search(session))
        if c2.button("Edit my answers", key="g_edit", width="stretch"):
            session.phase = "intake"
            st.rerun()
    elif guided and session.phase == "matching":
        if st.button("Check my eligibility for these trials", type="primary", key="g_match"):
            chat.guided_step(session, lambda g: g.run_matching(session))
    if guided and session.phase in ("intake", "search", "matching", "selection"):
        chat.health_records(session)  # before the eligibility check, which reads the uploaded lab values

    cards, selectable = vm.cards_to_show(session, events)
    if cards:
        st.subheader("Trials to choose from" if selectable else "Trials")
        patient = session.patient_profile
        origin = (patient["latitude"], patient["longitude"]) if "latitude" in patient else None
        with health.database_errors():
            points = vm.site_points(vm.backend(), [c["nct_id"] for c in cards], origin)
        st.pydeck_chart(vm.cards_deck(points, origin, patient.get("travel_radius_miles"),
                                      patient.get("location") or "You"), height=320, key="asst_map")
        st.caption(f"{len(points):,} sites of these trials; the red ring is how far you said you can travel.")
        for card in map(vm.card_view, cards):
            with st.container(border=True):
                st.markdown(f"**{vm.card_link(card)}** · `{card['nct_id']}`")
                fit = (f"Fit {card['fit']}/100" + (f" ({card['band']})" if card["band"] else "") + " · "
                       if card["fit"] is not None else "")
                st.markdown(f"{vm.badge_html(card['verdict'], card['colour'])} &nbsp; {inert.html_text(fit)}"
                            f"{inert.html_text(card['phases'])} · {inert.html_text(card['status'])}",
                            unsafe_allow_html=True)
                live_ui.live_status_box(card["nct_id"], card["status_code"], card["last_update"],
                                        stale_note=card["status_note"] or None, key=f"live_{card['nct_id']}")
                if card["distance_note"]:
                    st.warning(card["distance_note"], icon="📍")
                if card["summary"]:
                    st.markdown(inert.md(card["summary"]))
                if card["criteria_note"]:  # it says why the fit is 20, so the fit explanation would repeat it
                    st.caption(card["criteria_note"])
                elif card["fit_explanation"]:
                    st.caption(card["fit_explanation"])
                if card["nearest"]:
                    st.caption(f"📍 Nearest site: {inert.md_line(card['nearest'])}")
                if selectable:
                    st.checkbox("Include in my report", key=f"asst_pick_{card['nct_id']}",
                                value=card["nct_id"] in session.selected_nct_ids)
        if selectable:
            picked = [c["nct_id"] for c in cards if S.get(f"asst_pick_{c['nct_id']}")]
            wording = (f"Use the {len(picked)} ticked trial{'s' if len(picked) != 1 else ''} for my report" if picked
                       else "Tick at least one trial for your report")
            if st.button(wording, type="primary", disabled=not picked, key="asst_select"):
                if guided:
                    chat.guided_step(session, lambda g: g.select(session, picked))
                else:
                    chat.model_turn(session, TrialSelection(tuple(picked)), f"I have chosen: {', '.join(picked)}")

    if guided and session.phase == "report":
        if st.button("Write my report", type="primary", key="g_report"):
            chat.guided_step(session, lambda g: g.make_report(session))

    if session.report_html:
        st.subheader("Your report")
        c1, c2, c3 = st.columns(3)
        c1.download_button("Download report (HTML)", session.report_html, file_name="trial-report.html",
                           mime="text/html", key="asst_dl_html", width="stretch")
        pdf = chat.ready_pdf(session.report_html)
        if pdf:
            c2.download_button("Download report (PDF)", pdf, file_name="trial-report.pdf", mime="application/pdf",
                               key="asst_dl_pdf", width="stretch")
        elif report.find_chromium() is not None and c2.button("Prepare a PDF", key="asst_pdf_make", width="stretch"):
            chat.make_pdf(session.report_html)
        if guided and session.phase == "followup":
            if c3.button("Change my selection", key="g_reselect", width="stretch"):
                session.phase, session.flags["selection_complete"] = "selection", False
                chat.save(session)
                st.rerun()
        st.iframe(vm.report_frame_url(session.report_html), height=720)
        chat.contact_messages(session)
        if guided and session.phase == "followup" and st.button("Edit my answers and search again", key="g_again"):
            session.phase = "intake"
            st.rerun()

if not guided:
    prompt = st.chat_input("Type your message…", max_chars=20_000, key="asst_chat")
    if prompt:
        with main:
            chat.model_turn(session, prompt, prompt)
ui_state.footer()
