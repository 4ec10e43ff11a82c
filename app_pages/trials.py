"""Trials page: the matching trials as a sortable, paginated table; exports; one trial's details; comparison."""

import math

import pandas as pd
import streamlit as st

from services import inert, results, trials
from services.dashboard import export, search, trialview
from services.data import provenance
from services.data.normalize import label
from services.errors import BadInput
from services.freshness import last_update_of
from services.ui import health
from services.ui import live as live_ui
from services.ui import morefilters as ui_more
from services.ui import state as ui_state

health.ensure_database()
f = ui_state.page_setup("Trials")
place = f.place()
near = (place.lat, place.lon) if place is not None else (None, None)


def open_trial(nct_id: str) -> None:
    st.query_params.pop("compare", None)
    st.query_params["nct"] = nct_id


def open_compare(ids: list[str]) -> None:
    st.query_params.pop("nct", None)
    st.query_params["compare"] = ",".join(ids)


def back_to_list() -> None:
    st.query_params.pop("nct", None)
    st.query_params.pop("compare", None)


def facts_grid(pairs: list[tuple[str, str]], per_row: int = 4) -> None:
    for start in range(0, len(pairs), per_row):
        for col, (name, value) in zip(st.columns(per_row), pairs[start:start + per_row], strict=False):
            col.markdown(f"**{name}**  \n{inert.md(value)}")


def table_or_note(table: pd.DataFrame, note: str) -> None:
    """A full-width table, or a short caption when it has no rows."""
    if table.empty:
        st.caption(note)
    else:
        st.dataframe(table, hide_index=True, width="stretch")


def show_detail(d: trials.TrialDetail) -> None:
    s = d.study
    st.button("← All matching trials", on_click=back_to_list, key="detail_back")
    st.header(inert.md_line(s.get("title") or d.nct_id), anchor=False)
    st.markdown(f"**{d.nct_id}** · {inert.ctgov_link(d.nct_id, 'Open on ClinicalTrials.gov ↗')}"
                + (f" · acronym {inert.md(str(s['acronym']))}" if s.get("acronym") else ""))
    if s.get("official_title") and s.get("official_title") != s.get("title"):
        st.caption(inert.md(s["official_title"]))
    live_ui.live_status_box(d.nct_id, s.get("status"), last_update_of(s), stale_note=trialview.status_freshness(d),
                            key="live_detail")
    copy_note = provenance.missing_note(d.provenance)
    if copy_note:
        st.info(copy_note, icon="🧩")
    facts_grid(trialview.key_facts(d, f.unit))
    if d.conditions:
        st.markdown("**Conditions:** " + inert.md("; ".join(d.conditions)))
    posted = bool(s.get("has_results"))
    tabs = st.tabs(["Summary", "Eligibility", "Arms & interventions", "Outcomes",
                    f"Sites ({len(d.sites):,})", "Dates & sponsors", *(["Results"] if posted else [])])
    with tabs[0]:
        head, whole = trialview.preview(
            provenance.describe(s.get("brief_summary"), "summary", d.provenance, "No summary given."))
        st.markdown(trialview.registry_markdown(head))
        if whole:
            with st.expander("Read the whole summary"):
                st.markdown(trialview.registry_markdown(whole))
        if s.get("detailed_description"):
            with st.expander("Detailed description"):
                st.markdown(trialview.registry_markdown(s["detailed_description"]))
        design = trialview.design_facts(d)
        if design:
            st.markdown("**Design:** " + " · ".join(f"{k}: {inert.md_line(v)}" for k, v in design))
    with tabs[1]:
        st.markdown(f"**Ages:** {inert.md(trialview.ages_text(s, d.provenance))} · **Sex:** "
                    f"{inert.md(trialview.sex_text(s, d.provenance))} · **Healthy volunteers:** "
                    f"{inert.md(trialview.healthy_volunteers_text(s, d.provenance))}")
        crit = d.criteria
        origin = provenance.criteria_origin(d.provenance)
        if not crit.all and d.provenance is not None and d.provenance.lacks_field("criteria"):
            st.info(f"Eligibility criteria text: {provenance.NOT_IN_COPY} ({d.url}).")
        elif not crit.all:
            st.info("The registry entry gives no eligibility criteria text.")
        else:
            if origin:
                st.caption(origin)
            if crit.notice:
                st.caption(crit.notice)
            st.subheader(f"Inclusion criteria ({len(crit.inclusion)})", anchor=False)
            st.markdown(trialview.criteria_markdown(crit.inclusion) or "None listed.")
            st.subheader(f"Exclusion criteria ({len(crit.exclusion)})", anchor=False)
            st.markdown(trialview.criteria_markdown(crit.exclusion) or "None listed.")
    with tabs[2]:
        st.subheader("Arms", anchor=False)
        table_or_note(trialview.arms_table(d), "No arms or groups listed.")
        st.subheader("Interventions", anchor=False)
        table_or_note(trialview.interventions_table(d), "No interventions listed.")
    with tabs[3]:
        groups = trialview.outcomes_by_type(d)
        if not groups:
            st.caption("No outcome measures listed.")
        for name, frame in groups.items():
            st.subheader(f"{name} outcomes ({len(frame)})", anchor=False)
            st.dataframe(frame, hide_index=True, width="stretch",
                         column_config={"measure": st.column_config.TextColumn("Measure", width="large"),
                                        "time_frame": "Time frame", "description": "Description"})
    with tabs[4]:
        sites = trialview.sites_table(d, f.unit)
        if sites.empty:
            st.caption("No sites listed.")
        else:
            if place is not None:
                st.caption(f"Distances from {place.name}, nearest first.")
            else:
                sites = sites.drop(columns="distance")
                st.caption("Set a place in the sidebar to see the distance to each site.")
            st.dataframe(sites, hide_index=True, width="stretch",
                         column_config={"distance": st.column_config.NumberColumn(f"Distance ({f.unit})",
                                                                                  format="%.1f")})
    with tabs[5]:
        st.table({"Date": [k for k, _ in trialview.key_dates(d)],
                  "": [inert.md_line(v) for _, v in trialview.key_dates(d)]})
        lead = d.lead_sponsor or "—"
        if d.lead_class:
            lead += f" ({label('funder_class', d.lead_class)})"
        st.markdown(f"**Lead sponsor:** {inert.md(lead)}")
        st.markdown("**Collaborators:** " + (inert.md("; ".join(d.collaborators))
                                              if d.collaborators else "none listed"))
        if d.keywords:
            st.markdown("**Keywords:** " + inert.md("; ".join(d.keywords)))
    if posted:
        with tabs[6]:
            show_results(d)


def show_results(d: trials.TrialDetail) -> None:
    """Participant flow, baseline characteristics and primary outcomes with their analyses, as posted."""
    with health.database_errors():
        r = ui_state.cached(results.trial_results, d.nct_id)
    if not r.any:
        st.caption("Results are posted on ClinicalTrials.gov, but this copy of the registry holds no result "
                   "tables for this trial; open it on ClinicalTrials.gov to read them.")
        return
    st.caption("As posted by the sponsor; one column per group. Values are the group's measure with its spread "
               "in brackets.")
    st.subheader("Participant flow", anchor=False)
    table_or_note(r.flow, "No participant flow posted.")
    st.subheader("Baseline characteristics", anchor=False)
    table_or_note(r.baseline, "No baseline characteristics posted.")
    st.subheader(f"Primary outcomes ({len(r.primary)})", anchor=False)
    if not r.primary:
        st.caption("No primary outcome results posted.")
    for outcome in r.primary:
        st.markdown(f"**{inert.md(outcome.title)}**")
        about = f"{outcome.measure} · time frame: {outcome.time_frame}" if outcome.time_frame else outcome.measure
        st.caption(inert.md(about))
        table_or_note(outcome.table, "No numbers posted for this outcome.")
        if not outcome.analyses.empty:
            st.markdown("*Statistical analyses*")
            st.dataframe(outcome.analyses, hide_index=True, width="stretch")


def show_compare(ids: list[str]) -> None:
    st.button("← All matching trials", on_click=back_to_list, key="compare_back")
    st.header("Compare trials", anchor=False)
    details, missing = [], []
    with health.database_errors():
        for nct in ids[:trialview.MAX_COMPARE]:
            d = ui_state.cached(search.trial_detail, nct, *near)
            (details.append(d) if d is not None else missing.append(nct))
    if len(ids) > trialview.MAX_COMPARE:
        st.warning(f"At most {trialview.MAX_COMPARE} trials side by side; showing the first "
                   f"{trialview.MAX_COMPARE}.", icon="⚠️")
    if missing:
        st.warning("Not in the connected database: " + inert.md_line(", ".join(missing)), icon="🔍")
    if len(details) < 2:
        st.info("Choose two to four trials to compare (tick them in the table, then **Compare**).")
        return
    table = trialview.comparison(details, f.unit)
    st.table(trialview.comparison_cells(table))
    st.caption("Share this comparison with the page link (the ids are in the address).")
    for d in details:
        st.button(f"Details of {d.nct_id}", key=f"cmp_open_{d.nct_id}", on_click=open_trial, args=(d.nct_id,))


# ---- which view -----------------------------------------------------------------------------------
st.title("📋 Trials")
raw_nct = st.query_params.get("nct")
compare_raw = st.query_params.get_all("compare")

if raw_nct is not None:
    try:
        nct = search.parse_nct_id(raw_nct)
    except BadInput as err:
        st.error(f"**Cannot open that trial.** {inert.md_line(err)}", icon="🚫")
        st.query_params.pop("nct", None)
        nct = None
    if nct is not None:
        with health.database_errors():
            detail = ui_state.cached(search.trial_detail, nct, *near)
        if detail is None:
            st.warning(f"**No trial {nct} in the connected database.** It may not exist, or it is not part of the "
                       f"loaded data (the embedded sample is a small part of the registry). Check the id on "
                       f"[ClinicalTrials.gov]({trials.ctgov_url(nct)}).", icon="🔍")
        else:
            show_detail(detail)
            ui_state.footer()
            st.stop()

if compare_raw:
    ids, bad = trialview.parse_compare(compare_raw)
    if bad:
        st.error("Not ClinicalTrials.gov ids (NCT followed by 8 digits): " + inert.md_line(", ".join(bad)), icon="🚫")
    if ids:
        show_compare(ids)
        ui_state.footer()
        st.stop()

# ---- the table of matching trials ------------------------------------------------------------------
with health.database_errors():
    total = ui_state.cached(search.count_trials, f)
    ui_more.left_out_notes(f, "trials")  # Explore's notes: what a set filter leaves out, "include them"

sorts, default_sort = trialview.sorts_for(f, near=place is not None)
# Sort, direction, page size, page and ticked rows live in the URL (and the share link) and in this session's
# memory, so a link reopens this exact page of the table and a visit to a trial's details comes back to it.
# A sort nobody chose follows the default when the filters change it (typing a condition brings relevance).
previous_default = st.session_state.get("trials_sort_default", default_sort)
st.session_state["trials_sort_default"] = default_sort
if st.session_state.get("trials_sort") not in (None, *sorts) or (
        default_sort != previous_default and st.session_state.get("trials_sort") in (None, previous_default)):
    st.session_state.pop("trials_sort", None)
    if ui_state.view_memory("sort") not in sorts or ui_state.view_memory("sort") == previous_default:
        ui_state.set_view_param("sort", default_sort, default_sort)
ui_state.view_widget("trials_sort", "sort", default_sort, lambda v: v if v in sorts else None)
c1, c2, c3, c4 = st.columns([2, 1, 1, 1])
sort = c1.selectbox("Sort by", sorts, format_func=trialview.SORT_LABELS.get, key="trials_sort")
ui_state.set_view_param("sort", sort, default_sort)
default_desc = sort not in ("nearest_miles", "nct_id", "title")
ui_state.view_widget("trials_desc", "desc", default_desc, ui_state.parse_flag)
descending = c2.toggle("Descending", key="trials_desc")
ui_state.set_view_param("desc", descending, default_desc, ui_state.dump_flag)
default_size = trialview.PAGE_SIZES[1]
ui_state.view_widget("trials_size", "rows", default_size, lambda v: int(v) if int(v) in trialview.PAGE_SIZES else None)
size = c3.selectbox("Rows per page", trialview.PAGE_SIZES, key="trials_size")
ui_state.set_view_param("rows", size, default_size)
pages = max(1, math.ceil(total / size))
ui_state.view_widget("trials_page", "page", 1, lambda v: int(v) if int(v) >= 1 else None)
if st.session_state.get("trials_page", 1) > pages:
    st.session_state["trials_page"] = pages  # the filters changed and there are fewer pages now
page = c4.number_input(f"Page (of {pages:,})", min_value=1, max_value=pages, step=1, key="trials_page")
page = min(int(page), pages)
ui_state.set_view_param("page", page, 1)

with health.database_errors():
    rows = ui_state.cached(trialview.trials_page, f, sort, descending, size, (page - 1) * size)

first = (page - 1) * size + 1 if total else 0
st.caption(f"**{total:,} matching trials** · showing {first:,}–{(page - 1) * size + len(rows):,}, sorted by "
           f"{trialview.SORT_LABELS[sort].lower()} ({'descending' if descending else 'ascending'}; "
           + (trialview.RELEVANCE_NOTE if sort == "relevance" else "that column stands next to the NCT id.")
           + ") Click an NCT id to open the trial here; ↗ opens it on ClinicalTrials.gov. Tick rows to compare two "
           "to four.")
table = trialview.trials_table(rows, f.unit)
ticked = trialview.parse_compare(ui_state.view_memory("sel", "") or st.query_params.get("sel", ""))[0]
event = st.dataframe(
    table, hide_index=True, width="stretch", height=min(38 + 35 * max(len(table), 1), 600), on_select="rerun",
    selection_mode=["multi-row", "single-cell"], key="trials_table",
    selection_default={"selection": {"rows": [i for i, n in enumerate(table["nct_id"]) if n in ticked]}},
    column_order=trialview.table_column_order(sort, near=place is not None),
    column_config={
        "nct_id": st.column_config.TextColumn("NCT id", help="Click an id to open that trial's details here."),
        "link": st.column_config.LinkColumn("Registry", display_text="↗", width="small",
                                            help="Open the trial on ClinicalTrials.gov (new tab)."),
        "title": st.column_config.TextColumn("Title", width="large"),
        "phase": "Phase", "status": "Status", "conditions": "Conditions", "lead_sponsor": "Lead sponsor",
        "enrollment": st.column_config.NumberColumn("Enrollment", format="localized"),
        "start_date": st.column_config.DateColumn("Start"),
        "sites": st.column_config.NumberColumn("Sites", format="localized"),
        "nearest": st.column_config.NumberColumn(f"Nearest site ({f.unit})", format="%.1f"),
    },
)
clicked = [str(table.iloc[i]["nct_id"]) for i, col in (event.selection.cells if event else [])
           if col == "nct_id" and i < len(table)]
if clicked:
    open_trial(clicked[0])
    st.rerun()
selected = [str(table.iloc[i]["nct_id"]) for i in (event.selection.rows if event else []) if i < len(table)]
ui_state.set_view_param("sel", ",".join(selected), "")
b1, b2, b3 = st.columns([1, 1, 2])
b1.button("Open details", disabled=len(selected) != 1, on_click=open_trial, args=(selected[0] if selected else "",),
          key="open_selected", type="primary", help="Tick exactly one row.")
b2.button(f"Compare ({len(selected)})", disabled=not 2 <= len(selected) <= trialview.MAX_COMPARE,
          on_click=open_compare, args=(selected,), key="compare_selected",
          help=f"Tick two to {trialview.MAX_COMPARE} rows.")
with b3.form("open_by_id", border=False):
    typed = st.text_input("Open a trial by NCT id", placeholder="NCT05923281", max_chars=40, key="open_nct",
                          label_visibility="collapsed")
    if st.form_submit_button("Open by id"):
        try:
            open_trial(search.parse_nct_id(typed))
            st.rerun()
        except BadInput as err:
            st.error(inert.md_line(err), icon="🚫")

st.subheader("Export", anchor=False)
cap = search.EXPORT_CAP
if total > cap:
    st.warning(f"Exports hold the first {cap:,} of the {total:,} matching trials (in the table's order); narrow "
               "the filters to export the rest.", icon="⚠️")
else:
    st.caption(f"Exports hold all {total:,} matching trials with every column (at most {cap:,} rows per file).")
e1, e2, _ = st.columns([1, 1, 2])
stem = export.view_stem("trials-table", f"{f.query_string()}&sort={sort}&desc={descending}", f.condition)
e1.download_button("Download CSV", key="export_csv", disabled=total == 0, mime=export.FORMATS["csv"],
                   file_name=export.file_name(stem, "csv"), on_click="ignore",
                   data=lambda: export.to_csv_bytes(trialview.export_rows(f, sort, descending)))
e2.download_button("Download JSON", key="export_json", disabled=total == 0, mime=export.FORMATS["json"],
                   file_name=export.file_name(stem, "json"), on_click="ignore",
                   data=lambda: export.to_json_bytes(trialview.export_rows(f, sort, descending)))
ui_state.footer()
