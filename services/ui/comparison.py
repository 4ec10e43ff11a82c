"""The Compare page's filter set B: kept in the session, read from and written to the URL as `b.`-prefixed
parameters, edited with the sidebar's own filter widgets (services/ui/state.filter_widgets) in the page.

Filter set A is the shared sidebar filter of every page (services/ui/state.py).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from services.dashboard import compare
from services.dashboard.filters import Filters
from services.ui import state as ui_state

B_KEY = "compare_b"  # session key: filter set B
_READ = "compare_b_read"  # session key: the URL's B was read (a session's first visit of the page)
_SYNC = "compare_b_sync"  # session key: the filter the B widgets were last seeded with
PREFIX = "cmpb_"  # widget keys of the B panel


def current_b() -> Filters:
    """Filter set B of this session; on the first visit from a link, read from its `b.` parameters (with notices
    for what was not understood, shown with A's)."""
    if not st.session_state.get(_READ):
        st.session_state[_READ] = True
        params = ui_state.query_dict()
        if any(compare.is_b_param(k) for k in params):
            set_b(*compare.b_from_query(params))
    st.session_state.setdefault(B_KEY, Filters())
    return st.session_state[B_KEY]  # type: ignore[no-any-return]


def set_b(fb: Filters, notices: list[str] | None = None) -> None:
    """Replace filter set B (the widgets are seeded again on the next run; the URL is written by write_url)."""
    st.session_state[B_KEY] = fb
    st.session_state[_SYNC] = None
    if notices:
        st.session_state["notices"] = [*st.session_state.get("notices", []), *notices]


def write_url(fb: Filters) -> None:
    """Put B into the address bar as `b.` parameters, without the patient's answers (as A's link does)."""
    shared, _ = ui_state.shared_filters(fb)
    wanted = compare.b_query(shared)
    current = {k: v for k, v in ui_state.query_dict().items() if compare.is_b_param(k)}
    if current == wanted:
        return
    for key in current:
        del st.query_params[key]
    for key, values in wanted.items():
        st.query_params[key] = values


def _b_changed() -> None:
    fb, notices = ui_state.filters_from_widgets(PREFIX, current_b())
    set_b(fb, ["Filter set B: " + n for n in notices])


def _copy_a_to_b() -> None:
    set_b(ui_state.current_filters())


def _swap() -> None:
    fa, fb = ui_state.current_filters(), current_b()
    set_b(fa)
    st.session_state["widget_sync"] = None  # the sidebar shows the new A
    ui_state.set_filters(fb)


def _reset_b() -> None:
    set_b(Filters())


def render_b_panel(where: Any, fb: Filters) -> None:
    """B's filter widgets (every filter of the sidebar) and the Copy / Swap / Reset actions, in a container."""
    ui_state.seed_filter_widgets(PREFIX, fb, _SYNC)
    ui_state.filter_widgets(where, PREFIX, fb, _b_changed)
    row = where.container(horizontal=True, gap="small")
    row.button("Copy A to B", key="compare_copy", on_click=_copy_a_to_b, help="B becomes the sidebar's filters.")
    row.button("Swap A and B", key="compare_swap", on_click=_swap, help="The sidebar gets B's filters, B gets A's.")
    row.button("Reset B", key="compare_reset", on_click=_reset_b, help="B goes back to the default filters.")
