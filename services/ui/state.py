"""Session state, URL ⇄ filter glue, the shared sidebar and share link, the pages' one cache, the footer.

Every page calls `page_setup()` first: it initialises session keys, reads the URL once, re-applies
the filters to the URL (Streamlit clears query parameters on page switch), renders the shared
sidebar and returns the current filters.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any, TypeVar
from urllib.parse import quote

import streamlit as st

from services import inert
from services.dashboard import chartimage, compare, condition, stats
from services.dashboard.filters import COMPARE_PARAM_PREFIX, STATE_VALUES, Filters, is_view_param
from services.data import runtime
from services.data.normalize import FUNDER_CLASSES, LABELS, PHASES, STATUSES, STUDY_TYPES
from services.errors import TrialLandscapeError
from services.ui import health, morefilters
from services.ui.gate import require_access
from services.vocab import areas as area_vocab

T = TypeVar("T")
CACHE_TTL_S = 600
SAMPLE_NOTE = ("Embedded sample of real ClinicalTrials.gov studies, not the whole registry: an older part chosen by "
               "topic (diabetes, lung cancer, urology, Alzheimer's, blood cancers, …), many of them partial records "
               "from CSV downloads, plus a near-random slice of full records pulled in 2025–2026. The Data page "
               "counts them.")

_DEFAULTS: dict[str, Any] = {
    "filters": Filters(),
    "url_read": False,
    "notices": [],
    "widget_sync": None,
    "patient_values": {},  # filter field -> the value a patient's answers gave it (kept out of links)
    "view_memory": {},  # view parameter -> its last value in this session (map mode, Trials sort, …)
}


def init_state() -> None:
    """Create every session key once, with its default."""
    for key, value in _DEFAULTS.items():
        if key not in st.session_state:
            st.session_state[key] = type(value)(value) if isinstance(value, list | dict) else value


def current_filters() -> Filters:
    """The filters of this browser session."""
    init_state()
    return st.session_state["filters"]  # type: ignore[no-any-return]


def set_filters(f: Filters, notices: list[str] | None = None) -> None:
    """Replace the session's filters (and the URL with them)."""
    st.session_state["filters"] = f
    if notices:
        st.session_state["notices"] = list(notices)
    _write_url(f)


def query_dict() -> dict[str, list[str]]:
    """The URL's query parameters, each with all its values."""
    return {k: st.query_params.get_all(k) for k in st.query_params.keys()}  # noqa: SIM118


def _write_url(f: Filters) -> None:
    # The URL holds the filters minus patient answers (unless the visitor chose to include them) plus the
    # view.
    wanted = shared_filters(f)[0].to_query()
    wanted.update({k: v for k, v in query_dict().items() if is_view_param(k)})
    if wanted != query_dict():
        st.query_params.from_dict(wanted)


# ---- patient answers stay out of links ---------------------------------------------------------
_PATIENT_WORDS = {
    "condition": "diagnosis (condition)", "intervention": "treatment of interest", "near": "place",
    "radius": "travel distance", "unit": "travel distance", "age": "age", "sex": "sex",
    "phase": "preferred phases", "status": "trial statuses",
}
SHARE_PATIENT_KEY = "share_patient_answers"


def mark_patient_values(f: Filters, names: Iterable[str]) -> None:
    """Remember that these filter fields now hold values from a patient's answers (assistant, guided intake)."""
    init_state()
    remembered = st.session_state["patient_values"]
    for name in names:
        remembered[name] = getattr(f, name)
        if name == "near":  # the radius and its unit come with the place
            remembered["radius"], remembered["unit"] = f.radius, f.unit


def patient_fields(f: Filters) -> list[str]:
    """Filter fields whose current value is still the one a patient's answers gave them."""
    remembered = st.session_state.get("patient_values") or {}
    default = Filters()
    return [name for name, value in remembered.items()
            if getattr(f, name) == value and value != getattr(default, name)]


def _without_answers(f: Filters, fields: Iterable[str]) -> Filters:
    default = Filters()
    return replace(f, **{name: getattr(default, name) for name in fields})


def shared_filters(f: Filters) -> tuple[Filters, list[str]]:
    """The filters a link may carry and the patient answers left out of it (empty when the visitor opted in)."""
    fields = patient_fields(f)
    if not fields or st.session_state.get(SHARE_PATIENT_KEY):
        return f, []
    return _without_answers(f, fields), list(dict.fromkeys(_PATIENT_WORDS.get(name, name) for name in fields))


def read_url_once() -> None:
    """On a session's first run, take the filters from the URL (a share link), with notices."""
    init_state()
    if st.session_state["url_read"]:
        return
    st.session_state["url_read"] = True
    params = query_dict()
    if params:
        f, notices = Filters.from_query(params)
        st.session_state["filters"] = f
        st.session_state["notices"] = notices


def page_setup(title: str, *, sidebar: bool = True) -> Filters:
    """Common start of every page (`title` names it in services/ui/pages.py): config, state, URL, notices,
    sidebar; returns the filters."""
    from services.ui import pages

    with contextlib.suppress(st.errors.StreamlitAPIException):
        st.set_page_config(page_title=f"{title} · Trial Landscape", page_icon=pages.spec(title).icon,
                           layout="wide")
    require_access()
    if st.session_state.get("sidebar_page") != title:
        # Another page's sidebar widgets are new widgets to Streamlit: seed them from the filters again.
        st.session_state["sidebar_page"] = title
        st.session_state["widget_sync"] = None
    st.session_state.pop(_SHARE_SLOT, None)
    read_url_once()
    if sidebar:
        from services.ui import savedviews as ui_views

        ui_views.switch_if_opened(title)  # a saved view opened on another page goes to its own page
    f = current_filters()
    _write_url(f)
    if sidebar:
        f = render_sidebar()
    st.session_state[_NOTICE_SLOT] = (st.empty(), [])  # the notices' place, at the top of the page
    show_notices()
    if sidebar:
        ui_views.show_report()
    return f


_NOTICE_SLOT = "_notice_slot"  # this run's place for the notices (top of the page) and the notices it shows


def show_notices() -> None:
    """Show (once) what was dropped from the URL or the filters, and why: every notice (a link's unknown parameters,
    the one kind without bound, come as a few names and a count: filters.MAX_UNKNOWN_NOTICES).

    Notices queued later in the run (a view setting the page cannot use) join the same box at the top of the page:
    the footer shows them too.
    """
    notices = st.session_state.get("notices") or []
    if notices:
        slot, shown = st.session_state.get(_NOTICE_SLOT) or (st.empty(), [])
        shown = [*shown, *notices]
        slot.warning("Some filter values were not used:\n\n" + "\n".join(f"- {inert.md_line(n)}" for n in shown),
                     icon="⚠️")
        st.session_state[_NOTICE_SLOT] = (slot, shown)
        st.session_state["notices"] = []


# ---- the shared sidebar ------------------------------------------------------------------
_W = "flt_"  # prefix of the sidebar widget keys


def _yes_no(value: bool | None) -> str:
    return "ANY" if value is None else ("YES" if value else "NO")


def _widget_values(f: Filters) -> dict[str, Any]:
    return {
        "condition": f.condition or "", "intervention": f.intervention or "",
        "status": list(f.status), "phase": list(f.phase), "study_type": list(f.study_type),
        "funder_class": list(f.funder_class), "sponsor": f.sponsor or "", "country": list(f.country),
        "state": list(f.state), "near": f.near or "", "radius": float(f.radius), "unit": f.unit,
        "age": f.age, "sex": f.sex or "ANY", "healthy": _yes_no(f.healthy_volunteers),
        "start_from": f.start_from, "start_to": f.start_to, "enroll_min": f.enrollment_min,
        "enroll_max": f.enrollment_max, "results": _yes_no(f.has_results), "fda": _yes_no(f.fda_regulated),
        "area": list(f.area), "text": f.text or "", "narrower": f.narrower,  # issue 38, MeSH terms
        **morefilters.widget_values(f),
    }


def seed_filter_widgets(prefix: str, f: Filters, sync_key: str) -> None:
    """Give a filter panel's widgets (keys `prefix` + name) the values of `f`, unless they already show it."""
    key = f.query_string()
    if st.session_state.get(sync_key) == key and all(prefix + k in st.session_state for k in _widget_values(f)):
        return
    for name, value in _widget_values(f).items():
        st.session_state[prefix + name] = value
    st.session_state[sync_key] = key


def _from_widgets() -> None:
    f, notices = filters_from_widgets(_W)
    st.session_state["widget_sync"] = None
    set_filters(f, notices)


def filters_from_widgets(prefix: str, before: Filters | None = None) -> tuple[Filters, list[str]]:
    """The filters a filter panel's widgets (keys `prefix` + name) hold, with notices for what was not used;
    `before` is the panel's filters before the edit (default: the sidebar's)."""
    # A widget the page did not create this session (a crafted client can send any widget's state) reads as
    # the
    # current filters' value, instead of a KeyError.
    s = {**{prefix + k: v for k, v in _widget_values(current_filters()).items()},
         **{k: st.session_state[k] for k in st.session_state if str(k).startswith(prefix)}}
    params: dict[str, Any] = {}
    before = before or current_filters()
    morefilters.hold_reversed(s, prefix, before)

    def put(key: str, value: Any) -> None:
        if value not in (None, "", []):
            params[key] = value if isinstance(value, list) else [str(value)]

    put("condition", s[prefix + "condition"].strip())
    put("intervention", s[prefix + "intervention"].strip())
    put("text", s[prefix + "text"].strip())
    put("area", s[prefix + "area"])
    if not s[prefix + "narrower"]:
        params["narrower"] = ["no"]
    status = s[prefix + "status"]
    params["status"] = status if status else ["ANY"]
    put("phase", s[prefix + "phase"])
    put("type", s[prefix + "study_type"])
    put("funder", s[prefix + "funder_class"])
    put("sponsor", s[prefix + "sponsor"].strip())
    put("country", s[prefix + "country"])
    put("state", s[prefix + "state"])
    if s[prefix + "near"].strip():
        put("near", s[prefix + "near"].strip())
        put("radius", s[prefix + "radius"])
        put("unit", s[prefix + "unit"])
    for key in ("age", "sex", "healthy", "start_from", "start_to", "enroll_min", "enroll_max", "results",
                "fda"):
        value = s[prefix + key]
        if value != "ANY":  # the choice boxes' "Any"; the flags go into the URL as yes/no
            put(key, value.lower() if key in ("healthy", "results", "fda") else value)
    morefilters.widget_params(s, prefix, params, before)
    return Filters.from_query(params)


def _reset_filters() -> None:
    st.session_state["widget_sync"] = None
    set_filters(Filters())


def _label(kind: str) -> Callable[[str], str]:
    return lambda v: LABELS.get(kind, {}).get(v, v)


_SIDEBAR_CSS = ("<style>[data-testid='stSidebar'] .stMultiSelect div:has(> [data-testid='stMultiSelectTagsContainer']),"
                " [data-testid='stSidebar'] [data-testid='stMultiSelectTagsContainer'] "
                "{max-height: none !important; overflow-y: visible !important;}</style>")


def _condition_expansion(where: Any, text: str | None) -> None:
    """Say which MeSH headings the typed condition resolved to (vocabulary names only; plain text)."""
    if not text:
        return
    caption = condition.caption(text)
    if caption:
        where.text(caption)


def render_sidebar() -> Filters:
    """The filter panel shown on every page; edits update the shared filters and the URL."""
    f = current_filters()
    seed_filter_widgets(_W, f, "widget_sync")
    sb = st.sidebar
    # The status box shows every chosen status: Streamlit caps a multiselect's height, which hid the fifth of
    # the
    # five default statuses ("Available") behind a scroll.
    sb.markdown(_SIDEBAR_CSS, unsafe_allow_html=True)
    sb.header("Filters")
    filter_widgets(sb, _W, f, _from_widgets)
    sb.button("Reset filters", on_click=_reset_filters, width="stretch")
    from services.ui import savedviews as ui_views

    ui_views.render_panel(sb)
    # The link is written at the end of the page (footer), once the page has put its view into the URL.
    st.session_state[_SHARE_SLOT] = sb.container()
    return current_filters()


def filter_widgets(where: Any, prefix: str, f: Filters, on_change: Callable[[], None]) -> None:
    """Every filter's widget (keys `prefix` + name) in a container (the sidebar, or a page's second filter set);
    `on_change` runs after any edit (read the panel with filters_from_widgets(prefix))."""
    morefilters.range_notice(where, prefix)
    where.text_input("Condition", key=prefix + "condition", on_change=on_change, max_chars=200,
                  placeholder="e.g. lung cancer, T2D, Ewing sarcoma",
                  help="Matches condition names, MeSH terms and keywords, in any word order; spelling variants, "
                       "abbreviations and narrower MeSH terms are included. AND, OR, NOT (in capitals), "
                       "brackets "
                       "and \"quotes\" combine conditions: lung OR breast cancer; cancer NOT breast cancer. "
                       "An area name (oncology, cardiology) means its MeSH category.")
    _condition_expansion(where, f.condition)
    where.checkbox("Include narrower headings", key=prefix + "narrower", on_change=on_change,
                   help="On: a condition also finds the MeSH headings below it (breast cancer → its 8 "
                        "kinds). Off: the named headings alone. Explore shows how many trials each adds.")
    where.multiselect("Therapeutic area", list(area_vocab.names()), key=prefix + "area", on_change=on_change,
                      help="MeSH 2024 disease categories (C04 Neoplasms = oncology, C14 = cardiology, …): a "
                           "trial is in an area when one of its MeSH headings or condition names lies there.")
    where.text_input("Text", key=prefix + "text", on_change=on_change, max_chars=200,
                     placeholder='e.g. "quality of life" AND pain',
                     help="Full-text search (PostgreSQL, English stemming) of titles, brief summaries, "
                          "keywords and outcome measures. AND, OR, NOT in capitals; \"quotes\" for a phrase.")
    where.text_input("Intervention", key=prefix + "intervention", on_change=on_change, max_chars=200,
                  placeholder="e.g. pembrolizumab, metformin")
    morefilters.status_control(where, prefix, on_change)
    where.multiselect("Statuses", list(STATUSES), key=prefix + "status", on_change=on_change,
                   format_func=_label("status"),
                   help="Empty = any status. Default: trials open or still running (also active, not recruiting).")
    # A section is open while one of its filters is set, so no filter in force is hidden.
    with where.expander("Place", expanded=bool(f.near or f.country or f.state)):
        st.text_input("Near", key=prefix + "near", on_change=on_change, max_chars=200,
                      placeholder="City, state/country or US ZIP")
        c1, c2 = st.columns([3, 2])
        c1.number_input("Radius", min_value=1.0, max_value=20000.0, step=25.0, key=prefix + "radius",
                        on_change=on_change, format="%.6g")  # 60, not 60.00; 60.5 as typed
        c2.selectbox("Unit", ["mi", "km"], key=prefix + "unit", on_change=on_change)
        st.multiselect("Country", country_options(), key=prefix + "country", on_change=on_change)
        st.multiselect("US state", list(STATE_VALUES), key=prefix + "state", on_change=on_change)
    with where.expander("Patient", expanded=f.age is not None or bool(f.sex) or f.healthy_volunteers is not None):
        st.number_input("Age (years)", min_value=0.0, max_value=120.0, step=1.0, value=None, key=prefix + "age",
                        on_change=on_change, placeholder="any age", format="%.6g")
        st.selectbox("Sex", ["ANY", "FEMALE", "MALE"], key=prefix + "sex", on_change=on_change,
                     format_func=lambda v: {"ANY": "Any", "FEMALE": "Female", "MALE": "Male"}[v])
        st.selectbox("Healthy volunteers", ["ANY", "YES", "NO"], key=prefix + "healthy", on_change=on_change,
                      format_func=lambda v: {"ANY": "Any", "YES": "Accepts healthy volunteers",
                                             "NO": "Patients only"}[v])
    with where.expander("Study design", expanded=bool(f.phase or f.study_type or f.funder_class or f.sponsor) or any(
            v is not None for v in (f.start_from, f.start_to, f.enrollment_min, f.enrollment_max, f.has_results,
                                    f.fda_regulated))):
        st.multiselect("Phase", [p for p in PHASES], key=prefix + "phase", on_change=on_change,
                       format_func=_label("phase"))
        st.multiselect("Study type", list(STUDY_TYPES), key=prefix + "study_type", on_change=on_change,
                       format_func=_label("study_type"))
        st.multiselect("Funder class", list(FUNDER_CLASSES), key=prefix + "funder_class", on_change=on_change,
                       format_func=_label("funder_class"))
        st.text_input("Lead sponsor", key=prefix + "sponsor", on_change=on_change, max_chars=200)
        c1, c2 = st.columns(2)
        c1.number_input("Start from", min_value=1900, max_value=2100, step=1, value=None, key=prefix + "start_from",
                        on_change=on_change, placeholder="year")
        c2.number_input("Start to", min_value=1900, max_value=2100, step=1, value=None, key=prefix + "start_to",
                        on_change=on_change, placeholder="year")
        c1.number_input("Enrollment ≥", min_value=0, step=10, value=None, key=prefix + "enroll_min",
                        on_change=on_change, placeholder="any")
        c2.number_input("Enrollment ≤", min_value=0, step=10, value=None, key=prefix + "enroll_max",
                        on_change=on_change, placeholder="any")
        st.selectbox("Results posted", ["ANY", "YES", "NO"], key=prefix + "results", on_change=on_change,
                     format_func=lambda v: {"ANY": "Any", "YES": "Has results", "NO": "No results"}[v])
        st.selectbox("FDA-regulated", ["ANY", "YES", "NO"], key=prefix + "fda", on_change=on_change,
                     format_func=lambda v: {"ANY": "Any", "YES": "FDA-regulated drug or device",
                                            "NO": "Not FDA-regulated"}[v],
                     help="The registry's flags for a drug or device regulated by the US FDA; trials that give "
                          "neither flag (older records, CSV rows) are left out of both answers.")
    morefilters.extra_widgets(where, prefix, f, on_change)


# ---- the view in the URL and the share link -------------------------------------------------------
_SHARE_SLOT = "_share_slot"
_VIEW_WORDS = {"map": "map mode", "colour": "map colouring", "area": "map area setting", "tiles": "street tiles",
               "sort": "sort order", "desc": "sort direction", "rows": "rows per page", "page": "page number",
               "sel": "ticked trials", "nct": "the trial shown", "compare": "the trials compared",
               "sql": "the SQL query", "bars": "what the comparison's bars show",
               "colour_by": "the timeline's colours", "group_by": "the timeline's grouping", "rank": "the sites' ranking",
               "from": "the place distances are measured from"}


def view_widget(key: str, param: str, default: Any, parse: Callable[[str], Any], max_chars: int = 200) -> None:
    """Before widget `key` is created: its value from ?param= (a link), else this session's last one, else default.
    A value longer than max_chars is refused whole (never cut: a cut SQL query is another query), with a notice.

    Streamlit forgets a widget's value while the widget is not drawn (a trial's detail, another page) and clears
    the URL on a page switch; the session's memory brings the view back in both cases.
    """
    init_state()
    if key in st.session_state:
        return
    value: Any = None
    raw = st.query_params.get(param)
    if raw is not None:
        too_long = len(raw) > max_chars
        try:
            value = None if too_long else parse(raw)
        except (TypeError, ValueError):
            value = None
        if value is None:
            why = f"it is longer than {max_chars:,} characters" if too_long else f"“{raw[:40]}”"
            st.session_state["notices"] = [*st.session_state["notices"], f"Ignored {param}: {why}."]
    if value is None:
        value = st.session_state["view_memory"].get(param, default)
    st.session_state[key] = value


def set_view_param(param: str, value: Any, default: Any, dump: Callable[[Any], str] = str) -> None:
    """Keep a view setting in the URL (left out when it is the default) and in this session's memory."""
    init_state()
    st.session_state["view_memory"][param] = value
    if value == default or value is None:
        if param in st.query_params:
            del st.query_params[param]
        return
    text = dump(value)
    if st.query_params.get(param) != text:
        st.query_params[param] = text


def parse_flag(text: str) -> bool | None:
    """A yes/no view setting from the URL ("1"/"0"; None when it is neither)."""
    return {"1": True, "0": False}.get(text.strip())


def dump_flag(value: bool) -> str:
    """A yes/no view setting for the URL."""
    return "1" if value else "0"


def view_memory(param: str, default: Any = None) -> Any:
    """The last value this session gave a view setting (default when none)."""
    init_state()
    return st.session_state["view_memory"].get(param, default)


def view_query_params() -> dict[str, list[str]]:
    """The page's view settings in the URL (map mode, Trials sort, …), never the assistant's session link, and the
    Compare page's filter set B without a patient's answers even when the visitor let links carry them (a saved view
    is shared with everyone)."""
    params = {k: v for k, v in query_dict().items() if is_view_param(k) and k != "session"}
    if any(k.startswith(COMPARE_PARAM_PREFIX) for k in params):
        fb = compare.b_from_query(params)[0]
        params = {k: v for k, v in params.items() if not k.startswith(COMPARE_PARAM_PREFIX)}
        params.update(compare.b_query(_without_answers(fb, patient_fields(fb))))
    return params


def share_query(with_filters: bool = True) -> tuple[str, list[str], list[str]]:
    """The share link's query string, the words for what it holds, and the patient answers it leaves out."""
    f = current_filters()
    shared, left_out = shared_filters(f) if with_filters else (Filters(), [])
    parts = [shared.query_string()] if with_filters and shared.query_string() else []
    holds = [inert.md_line(line) for line in shared.describe()] if with_filters else []
    view = [(k, v) for k, vs in query_dict().items() if is_view_param(k) and k != "session" for v in vs]
    parts += [f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in view]
    holds += list(dict.fromkeys(_VIEW_WORDS.get(k, "the query's parameters") for k, _ in view
                                if not k.startswith(COMPARE_PARAM_PREFIX)))
    if any(k.startswith(COMPARE_PARAM_PREFIX) for k, _ in view):  # the Compare page's filter set B
        holds.append(inert.md_line(compare.b_words(compare.b_from_query(query_dict())[0])))
    return "&".join(parts), holds, left_out


def render_share_link() -> None:
    """The share link of the current view (copy button on the code block) and exactly what it contains."""
    slot = st.session_state.pop(_SHARE_SLOT, None)
    box = slot if slot is not None else st.sidebar
    with_filters = slot is not None
    answers = patient_fields(current_filters()) if with_filters else []
    base = ""
    with contextlib.suppress(Exception):
        base = str(st.context.url or "").split("?", 1)[0]
    query, holds, left_out = share_query(with_filters)
    link = f"{base}?{query}" if query else (base or "?")
    box.caption("**Copy share link** (copy button at the right of the box) — it opens this view in any browser. "
                "It contains: " + ("; ".join(holds) if holds else "nothing but the page") + ".")
    box.code(link, language=None, wrap_lines=True)
    if answers:
        if left_out:
            box.caption("Left out: your answers to the assistant (" + ", ".join(left_out) + "). They stay in "
                        "this browser tab.")
        box.checkbox("Include my answers in the link", key=SHARE_PATIENT_KEY,
                     help="Puts your answers (such as age, sex, diagnosis and place) into the link and the address bar.")
        if st.session_state.get(SHARE_PATIENT_KEY):
            box.warning("The link now holds your answers: anyone who gets it — and any chat, e-mail or browser "
                        "history it passes through — can read them.", icon="⚠️")


# ---- the pages' one cache ----------------------------------------------------------------
def cached(fn: Callable[..., T], *args: Any) -> T:
    """Call a service function through the pages' one cache (same function and args → one computation).

    Arguments must be values Streamlit can hash (Filters, strings, numbers, tuples). Every visitor and
    rerun gets the same object: nothing is pickled or copied on a hit (for the Map's thousands of sites
    copying was a large part of each render), so a page must not change what it receives. Errors are not
    kept. While this process still loads the in-process facet engine (once per start; ~20 s for all of
    AACT), a spinner says so instead of a blank page.
    """
    with facets_loading_notice():
        generation = stats.data_generation(runtime.get_db())  # after an import: anew
        name = f"{fn.__module__}.{fn.__qualname__}"
        return _result(name, args, generation, fn)  # type: ignore[no-any-return]


# st.cache_resource: shared by every session, single flight per key, no copy on a hit, errors not kept.
# Filters are keyed by their repr (exact: a dataclass of scalars and tuples), cheaper than Streamlit's
# field-by-field hash.
@st.cache_resource(ttl=CACHE_TTL_S, max_entries=512, show_spinner=False, hash_funcs={Filters: repr})
def _result(name: str, args: tuple[Any, ...], generation: str | None, _fn: Callable[..., Any]) -> Any:
    del name, generation  # only the cache key
    return _fn(*args)


def clear_cache() -> None:
    """Forget every cached result (the next render queries the database again)."""
    _result.clear()
    _country_names.clear()
    _freshness.clear()
    stats.clear_cache()


@contextlib.contextmanager
def facets_loading_notice() -> Iterator[None]:
    """A spinner naming the wait while this process still loads the in-process facet engine (else nothing)."""
    if stats.engine_loading(runtime.get_db()):
        with st.spinner("Loading every study into memory for fast filtering (once, after a start on new data); "
                        "meanwhile the numbers come from SQL, which is slower at registry scale…"):
            yield
    else:
        yield



@st.cache_data(ttl=3600, max_entries=1, show_spinner=False)
def _country_names() -> list[str]:
    from services.dashboard.search import country_names

    return country_names()


def country_options() -> list[str]:
    """Country names present in the database, for the sidebar ([] while it is down, and not cached so)."""
    try:
        return _country_names()
    except TrialLandscapeError:
        return []


FRESHNESS_TTL_S = 60


@st.cache_data(ttl=FRESHNESS_TTL_S, max_entries=1, show_spinner=False)
def _freshness() -> str | None:
    # One query per minute for every visitor instead of one per render: it scans the studies' update dates.
    from services.dashboard.dbinfo import freshness

    return freshness()


def footer() -> None:
    """Share link, data source and freshness under every page; on the sample, say it is topic-biased."""
    show_notices()  # those the page queued after page_setup (its view settings from the URL)
    render_share_link()
    health.warm_up_geocoder()
    try:
        src = runtime.source()
        fresh = _freshness()
    except TrialLandscapeError:
        return
    parts = [f"Data: ClinicalTrials.gov via AACT schema — {src.description}"]
    if fresh:
        parts.append(f"newest update posted {fresh}")
    st.divider()
    st.caption(" · ".join(parts))
    if src.kind == "embedded":
        st.caption(SAMPLE_NOTE)


def update_filters(*, from_patient: bool = False, **changes: Any) -> Filters:
    """Change some filter fields from code (chart clicks, the assistant) and keep URL/sidebar in step.

    from_patient: the values are a patient's answers (assistant, guided intake), so links leave them out.
    """
    f = replace(current_filters(), **changes)
    if from_patient:
        mark_patient_values(f, changes)
    st.session_state["widget_sync"] = None
    set_filters(f)
    return f


def image_format(where: Any, key: str) -> str:
    """The format the charts' camera button downloads on this page (PNG or SVG), chosen with a control."""
    chosen = where.segmented_control(
        "Chart images", chartimage.IMAGE_FORMATS, format_func=str.upper, default="png", key=key,
        help="The camera button at a chart's top right downloads it in this format, the filters under its "
             "title.")
    return str(chosen or "png")
