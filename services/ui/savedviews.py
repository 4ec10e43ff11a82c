"""The sidebar's "Saved views" panel (open, save current as…, delete) and the change report shown after opening one.

Pure logic lives in services/dashboard/savedviews.py; this module is the Streamlit glue. Names are untrusted text:
they go through services/inert.py wherever Streamlit would read Markdown, and are plain cells in tables.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from services import inert
from services.dashboard import savedviews
from services.data import runtime
from services.errors import BadInput, TrialLandscapeError
from services.ui import pages
from services.ui import state as ui_state

REPORT_KEY = "saved_view_report"  # the change report of the view just opened
_SWITCH_KEY = "saved_view_switch"  # the page to go to after opening a view
_CONFIRM_KEY = "saved_view_confirm_delete"
_K = "sv_"  # widget key prefix
SHARED_NOTE = "Saved views are shared by everyone using this database."
PRIVACY_NOTE = ("A view keeps the filters and the page, never a patient's answers (diagnosis, age, sex, place …), "
                "like the share link.")
SHOWN_VIEWS = 30  # views listed in the sidebar


def _dbs() -> tuple[Any, Any]:
    return runtime.get_db(), runtime.get_app_db()


@st.cache_resource(ttl=10, max_entries=1, show_spinner=False)
def _snapshot_state() -> savedviews.SnapshotState:
    return savedviews.snapshot_state(runtime.get_db())


def view_report(view: savedviews.SavedView, latest: int | None, current: bool) -> savedviews.ChangeReport:
    """A view's change report up to the latest snapshot (the pages' cache keys it on the view and that generation)."""
    db, app_db = _dbs()
    return savedviews.change_report(db, view, app_db=app_db, state=_snapshot_state())


def _open(view_id: int) -> None:
    db, app_db = _dbs()
    view = savedviews.get_view(app_db, view_id)
    if view is None:
        st.session_state[REPORT_KEY] = None
        return
    # The report is taken before the baseline moves: it is what changed since the view was last opened.
    _snapshot_state.clear()
    st.session_state[REPORT_KEY] = savedviews.change_report(db, view, app_db=app_db)
    savedviews.mark_opened(db, view, app_db=app_db)
    params = view.view_params()
    st.session_state["view_memory"].update({k: v[0] for k, v in params.items() if v})
    st.session_state["widget_sync"] = None
    ui_state.set_filters(view.filters())
    st.session_state[_SWITCH_KEY] = (view.page, params)


def _save() -> None:
    s = st.session_state
    db, app_db = _dbs()
    f = ui_state.current_filters()
    page = s.get("sidebar_page") or "Explore"
    view_params = ui_state.view_query_params()
    country = s.get(_K + "country") or None
    try:
        page = page if page in savedviews.PAGES else "Explore"
        view = savedviews.save_view(db, s.get(_K + "name", ""), f, page=page,
                                    view_params=view_params, watch_country=country,
                                    without=ui_state.patient_fields(f), app_db=app_db)
    except BadInput as err:
        s[_K + "message"] = ("error", str(err))
        return
    s[_K + "name"] = ""
    s[_K + "message"] = ("ok", f"Saved “{view.name}”.")


def _ask_delete(view_id: int) -> None:
    st.session_state[_CONFIRM_KEY] = view_id


def _delete(view_id: int) -> None:
    db, app_db = _dbs()
    view = savedviews.get_view(app_db, view_id)
    savedviews.delete_view(db, view_id, app_db=app_db)
    st.session_state[_CONFIRM_KEY] = None
    if view is not None:
        st.session_state[_K + "message"] = ("ok", f"Deleted “{view.name}”.")
    report = st.session_state.get(REPORT_KEY)
    if report is not None and report.view.id == view_id:
        st.session_state[REPORT_KEY] = None


def _keep() -> None:
    st.session_state[_CONFIRM_KEY] = None


def switch_if_opened(current_page: str) -> None:
    """After a view was opened: go to its page (with its view settings) unless already there."""
    target = st.session_state.pop(_SWITCH_KEY, None)
    if target is None:
        return
    page, params = target
    if page != current_page and page in savedviews.PAGES:
        st.switch_page(pages.st_page(page), query_params={**ui_state.current_filters().to_query(), **params})


def render_panel(sidebar: Any) -> None:
    """The "Saved views" expander of the sidebar."""
    try:
        views = savedviews.list_views(runtime.get_app_db())
    except TrialLandscapeError as err:
        with sidebar.expander("Saved views"):
            st.caption(f"Saved views are not available: {inert.md_line(err)}")
        return
    report = st.session_state.get(REPORT_KEY)
    message = st.session_state.pop(_K + "message", None)
    # A fixed label: Streamlit keeps an expander open across reruns only while its label stays the same.
    confirm = st.session_state.get(_CONFIRM_KEY)
    with sidebar.expander("Saved views", expanded=report is not None or message is not None or confirm is not None):
        st.caption(f"{len(views)} saved. {SHARED_NOTE}" if views else SHARED_NOTE)
        state = _snapshot_state() if views else None
        for view in views[:SHOWN_VIEWS]:
            left, right = st.columns([5, 1], vertical_alignment="center")
            left.button(inert.md_line(view.name), key=f"{_K}open_{view.id}", on_click=_open, args=(view.id,),
                        help=f"Open on {view.page}: " + "; ".join(inert.md_line(x) for x in view.describe()),
                        width="stretch")
            right.button(":material/delete:", key=f"{_K}del_{view.id}", on_click=_ask_delete, args=(view.id,),
                         type="tertiary",
                         help="Delete this view (for everyone using this database)")
            try:
                summary = ui_state.cached(view_report, view, state.latest if state else None,
                                          bool(state and state.current)).summary()
            except TrialLandscapeError as err:
                summary = f"could not check: {err}"
            st.caption(f"{view.page} · {inert.md_line(summary)}")
            if confirm == view.id:
                st.warning(f"Delete “{inert.md_line(view.name)}” for everyone?", icon="🗑️")
                a, b = st.columns(2)
                a.button("Delete", key=f"{_K}yes_{view.id}", on_click=_delete, args=(view.id,), type="primary")
                b.button("Keep", key=f"{_K}no_{view.id}", on_click=_keep)
        if len(views) > SHOWN_VIEWS:
            st.caption(f"… and {len(views) - SHOWN_VIEWS} more (`python -m services watch` lists every one).")
        if not views:
            st.caption("No saved views yet.")
        st.text_input("Save current as…", key=_K + "name", max_chars=savedviews.MAX_NAME,
                      placeholder="a name for these filters")
        st.selectbox("Watch new sites in", [""] + ui_state.country_options(), key=_K + "country",
                     format_func=lambda c: c or "the view's country filter (if any)")
        st.button("Save view", key=_K + "save", on_click=_save, width="stretch")
        st.caption(PRIVACY_NOTE)
        if message:
            (st.success if message[0] == "ok" else st.error)(inert.md_line(message[1]))


_KIND_WORDS = {"new_trial": "New trial", "status": "Status changed", "results": "Results posted",
               "sites": "New sites", "removed": "No longer in the data"}


def report_frame(report: savedviews.ChangeReport) -> pd.DataFrame:
    """The report's changes as a table: links to the trial's page here and on ClinicalTrials.gov."""
    rows = [{"change": _KIND_WORDS[c.kind] + (f" in {c.country}" if c.country else ""),
             "trial": f"Trials?nct={c.nct_id}", "title": c.title, "before": c.before or "", "after": c.after or "",
             "registry": inert.CTGOV_STUDY + c.nct_id} for c in report.changes]
    return pd.DataFrame(rows, columns=["change", "trial", "title", "before", "after", "registry"])


def _close_report() -> None:
    st.session_state[REPORT_KEY] = None


def show_report() -> None:
    """The change report of the view just opened, above the page (until closed)."""
    report: savedviews.ChangeReport | None = st.session_state.get(REPORT_KEY)
    if report is None:
        return
    with st.container(border=True, key="saved_view_report_box"):
        since = f" since the import of {report.since:%Y-%m-%d %H:%M} UTC" if report.since else ""
        st.markdown(f"**What changed in “{inert.md_line(report.view.name)}”{since}** — "
                    f"{inert.md_line(report.summary())}")
        if not report.known:
            st.warning(f"Cannot tell what changed: {inert.md_line(report.reason)}.", icon="❔")
        elif report.changes:
            shown = len(report.changes)
            if shown < report.total:
                st.caption(f"The first {shown:,} of {report.total:,} changes; `python -m services watch --limit N` "
                           "lists more.")
            st.dataframe(report_frame(report), hide_index=True, width="stretch", column_config={
                "change": st.column_config.TextColumn("Change"),
                "trial": st.column_config.LinkColumn("Trial", display_text=r"nct=(NCT\d+)"),
                "title": st.column_config.TextColumn("Title", width="large"),
                "before": st.column_config.TextColumn("Before"),
                "after": st.column_config.TextColumn("After"),
                "registry": st.column_config.LinkColumn("Registry", display_text="↗", width="small"),
            })
        else:
            st.caption("Nothing this view watches changed (new trials, status, results posted, new sites in the "
                       "watched countries).")
        if report.known:
            st.caption("The view now counts as opened: its next report starts from the current import.")
        else:
            st.caption("The view keeps its baseline: the next import is compared with it.")
        st.button("Close", key=_K + "close_report", on_click=_close_report)
