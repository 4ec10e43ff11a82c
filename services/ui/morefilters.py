"""Issue 38's sidebar controls and notes: the one-click status control, the extra filters (date ranges, age
group, intervention type, facility name) and, on a page, how many records each set filter cannot judge, with
the option to include them. The filter meanings live in services/dashboard/filterplus.py and
filters.FILTER_DEFS."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from services.dashboard import filterplus, stats
from services.dashboard.filters import Filters
from services.data.normalize import LABELS, OPEN_STATUSES

STATUS_MODES = {"OPEN": "Open or still running", "ANY": "Any status"}
YEAR_FIELDS = (
    ("posted_from", "posted_to", "First posted"),
    ("updated_from", "updated_to", "Last update"),
    ("completion_from", "completion_to", "Primary completion"),
)


def status_mode(f: Filters) -> str | None:
    """The status control's value: OPEN (the default), ANY, or None for a chosen list of statuses."""
    return "OPEN" if f.status == OPEN_STATUSES else "ANY" if not f.status else None


def widget_values(f: Filters) -> dict[str, Any]:
    """The extra widgets' values (keys without the panel's prefix) for a filter."""
    values: dict[str, Any] = {
        "status_mode": status_mode(f),
        "age_group": list(f.age_group),
        "intervention_type": list(f.intervention_type),
        "facility": f.facility or "",
        "include": list(f.include_missing),
    }
    for lo, hi, _ in YEAR_FIELDS:
        values[lo], values[hi] = getattr(f, lo), getattr(f, hi)
    return values


def widget_params(s: dict[str, Any], prefix: str, params: dict[str, Any], before: Filters) -> None:
    """Put the extra widgets' values into URL parameters; a changed status control wins over the status list.
    """
    mode = s[prefix + "status_mode"]
    if mode is not None and mode != status_mode(before):  # the mode in force again: no change
        params["status"] = ["ANY"] if mode == "ANY" else list(OPEN_STATUSES)
    for key in ("age_group", "intervention_type"):
        if s[prefix + key]:
            params[key] = list(s[prefix + key])
    if str(s[prefix + "facility"]).strip():
        params["facility"] = [str(s[prefix + "facility"]).strip()]
    for lo, hi, _ in YEAR_FIELDS:
        for key in (lo, hi):
            if s[prefix + key] is not None:
                params[key] = [str(int(s[prefix + key]))]
    if s[prefix + "include"]:  # not a widget: the page's notes change it (left_out_notes); kept through edits
        params["include"] = list(s[prefix + "include"])


def status_control(where: Any, prefix: str, on_change: Callable[[], None]) -> None:
    """The status filter as one visible control: Open or still running / Any status (one click each).

    A radio list, one option a line: as two buttons side by side ("segmented control") the labels are wider
    than the sidebar (151 + 92 px in a 240 px column), so "Any status" wrapped under the first button. No
    option is chosen while a list of statuses of the user's own is in force (status_mode None)."""
    where.radio(
        "Status",
        list(STATUS_MODES),
        index=None,  # the value comes from the filters (seeded in session state), never a default
        key=prefix + "status_mode",
        on_change=on_change,
        format_func=STATUS_MODES.__getitem__,
        help="Every page starts on trials open or still running (recruiting, not yet "
        "recruiting, by invitation, active but not recruiting, available). Any status "
        "adds completed, terminated, withdrawn and the rest. For a list of your own, "
        "choose statuses below.",
    )


def extra_widgets(where: Any, prefix: str, f: Filters, on_change: Callable[[], None]) -> None:
    """The date ranges, age group, intervention type and facility name, in one section."""
    is_set = bool(f.age_group or f.intervention_type or f.facility) or any(
        getattr(f, name) is not None for lo, hi, _ in YEAR_FIELDS for name in (lo, hi)
    )
    with where.expander("More filters", expanded=is_set):
        st.multiselect(
            "Age group",
            list(filterplus.AGE_GROUPS),
            key=prefix + "age_group",
            on_change=on_change,
            format_func=filterplus.AGE_GROUP_LABELS.__getitem__,
            help="As ClinicalTrials.gov defines them, from the trial's minimum and maximum age: "
            "child 0–17, adult 18–64, older adult 65+. A trial open to any chosen group matches.",
        )
        st.multiselect(
            "Intervention type",
            list(LABELS["intervention_type"]),
            key=prefix + "intervention_type",
            on_change=on_change,
            format_func=LABELS["intervention_type"].__getitem__,
        )
        st.text_input(
            "Facility name",
            key=prefix + "facility",
            on_change=on_change,
            max_chars=200,
            placeholder="e.g. Mayo Clinic",
            help="A site's name contains this text (any case).",
        )
        for lo, hi, title in YEAR_FIELDS:
            for column, end, key in zip(st.columns(2), ("from", "to"), (lo, hi), strict=True):
                column.number_input(f"{title} {end}", min_value=1900, max_value=2100, step=1, value=None,
                                    key=prefix + key, on_change=on_change, placeholder="year")


def _set_include(key: str, widget: str) -> None:
    from services.ui import state as ui_state

    f = ui_state.current_filters()
    chosen = [k for k in f.include_missing if k != key] + ([key] if st.session_state.get(widget) else [])
    ui_state.update_filters(
        include_missing=tuple(k for k in (m.key for m in filterplus.MISSING) if k in chosen)
    )


def left_out_notes(f: Filters, page: str) -> None:
    """Under a page's caption: how many trials each set filter cannot judge leaves out, with "include them".
    """
    for item in stats.cached_left_out(f):
        if item.included:
            st.caption(
                f"Including {item.count:,} trials {item.without}, which the {item.names} filter cannot judge."
            )
        else:
            st.caption(
                f"The {item.names} filter leaves out {item.count:,} trials {item.without} (it cannot "
                "judge them)."
            )
        widget = f"{page}_include_{item.key}"
        st.session_state[widget] = item.included
        st.checkbox(
            f"Include trials {item.without} ({item.count:,})",
            key=widget,
            on_change=_set_include,
            args=(item.key, widget),
        )


# ---- a range typed one end at a time ----------------------------------------------------------------------
# (widget key of the lower end, of the upper end, the filter fields, words): widget keys as in
# state._widget_values.
RANGES = (
    ("start_from", "start_to", ("start_from", "start_to"), "Start year"),
    ("enroll_min", "enroll_max", ("enrollment_min", "enrollment_max"), "Enrollment"),
    *((lo, hi, (lo, hi), words) for lo, hi, words in YEAR_FIELDS),
)
NOTICE_KEY = "range_notice_"  # + the panel's prefix: the notice of a range end cleared, until dismissed


def hold_reversed(s: dict[str, Any], prefix: str, before: Filters) -> None:
    """A range whose newly typed end passes the other, older end: the older end is cleared (never swapped into
    a range nobody typed), and a notice stays in the panel until dismissed. Both ends new (a link): left to
    Filters.from_query, which swaps them with a notice."""
    for lo_key, hi_key, (lo_field, hi_field), words in RANGES:
        lo, hi = s.get(prefix + lo_key), s.get(prefix + hi_key)
        if lo is None or hi is None or lo <= hi:
            continue
        lo_new, hi_new = lo != getattr(before, lo_field), hi != getattr(before, hi_field)
        if lo_new == hi_new:
            continue
        stale, typed = (hi_key, lo) if lo_new else (lo_key, hi)
        cleared = s[prefix + stale]
        s[prefix + stale] = None
        end = "to" if lo_new else "from"
        st.session_state[NOTICE_KEY + prefix] = (
            f"{words}: {typed:g} is {'after' if lo_new else 'before'} the “{end}” value {cleared:g}, so that "
            f"end was cleared (not swapped). Type the “{end}” value to complete the range."
        )


def _dismiss(prefix: str) -> None:
    st.session_state.pop(NOTICE_KEY + prefix, None)


def range_notice(where: Any, prefix: str) -> None:
    """The notice of a cleared range end, at the top of its filter panel until the user dismisses it."""
    text = st.session_state.get(NOTICE_KEY + prefix)
    if not text:
        return
    box = where.container(border=True)
    box.warning(text, icon="↔️")
    box.button("Dismiss", key=f"dismiss_{prefix}range", on_click=_dismiss, args=(prefix,))
