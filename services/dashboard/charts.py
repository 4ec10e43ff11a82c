"""Pure chart builders for the Explore page: facet rows → plotly Figure, with one colour per category everywhere.

Nothing here touches Streamlit or the database: every builder takes the rows of one facet of
`stats.Dashboard` (dicts with value, label, count, …) and returns a `plotly.graph_objects.Figure`
whose points carry the facet value in `customdata[0]`, so a click can be turned back into a filter.
"""

from __future__ import annotations

import hashlib
import html
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import plotly.graph_objects as go

from services import inert
from services.cache import SingleFlightCache
from services.dashboard.chartimage import captioned
from services.dashboard.stats import FACETS

NOT_GIVEN = "#A7AFBC"  # grey for "Not given", "Unknown", "No sites listed": never a real category colour
ACCENT = "#3E7CB1"  # bars of top-N lists (sponsors, conditions, countries…): one series, one colour
RATE_LINE = "#D1495B"
HBAR_TICK_PX = 12  # Plotly's default tick font size
LABEL_CHARS = 32  # longer axis labels are shortened; the hover shows the full text
BAR_PX = 24  # height per bar of a horizontal bar chart

# A stable colour per category: the same status is the same colour in the status and outcome charts.
COLORS: dict[str, dict[Any, str]] = {
    "status": {
        "RECRUITING": "#2E9E44", "NOT_YET_RECRUITING": "#93D07E", "ENROLLING_BY_INVITATION": "#1BA6A6",
        "ACTIVE_NOT_RECRUITING": "#3E7CB1", "COMPLETED": "#2F3E75", "SUSPENDED": "#E3A21A",
        "TERMINATED": "#C8323C", "WITHDRAWN": "#EE7A30", "UNKNOWN": NOT_GIVEN, "AVAILABLE": "#8DB33A",
        "NO_LONGER_AVAILABLE": "#7D7D7D", "TEMPORARILY_NOT_AVAILABLE": "#C9B458",
        "APPROVED_FOR_MARKETING": "#8660B0", "WITHHELD": "#8C5A45",
    },
    "phase": {
        "EARLY_PHASE1": "#A9CCE8", "PHASE1": "#6AA6D6", "PHASE2": "#3478B5", "PHASE3": "#1D4E89",
        "PHASE4": "#7452A8", "NA": "#E39B4C", "NONE": NOT_GIVEN,
    },
    "funder_class": {
        "INDUSTRY": "#D1495B", "NIH": "#2F6FAE", "FED": "#4FA3A5", "OTHER_GOV": "#5C9E3F", "INDIV": "#E3B23C",
        "NETWORK": "#9A63A8", "OTHER": "#8C6D52", "UNKNOWN": NOT_GIVEN, "AMBIG": "#C9CDD4",
    },
    "study_type": {"INTERVENTIONAL": "#3E7CB1", "OBSERVATIONAL": "#E07B39", "EXPANDED_ACCESS": "#5C9E3F"},
    "sex": {"ALL": "#6C63A8", "FEMALE": "#D1495B", "MALE": "#2F8FC7"},
    "intervention_type": {
        "DRUG": "#3E7CB1", "DEVICE": "#E07B39", "BIOLOGICAL": "#5C9E3F", "PROCEDURE": "#C8323C",
        "RADIATION": "#9A63A8", "BEHAVIORAL": "#8C6D52", "GENETIC": "#D67AB1", "DIETARY_SUPPLEMENT": "#B5B238",
        "COMBINATION_PRODUCT": "#1BA6A6", "DIAGNOSTIC_TEST": "#E3B23C", "OTHER": "#7D8A99",
    },
    "age_group": {"CHILD": "#E3B23C", "ADULT": "#3E7CB1", "OLDER_ADULT": "#1BA6A6"},
    "series": {"Actual": "#2F3E75", "Anticipated": "#8FB8DE", "Type not given": NOT_GIVEN},
}
# Bucket values that mean "no data" in the bucketed facets.
_NO_DATA_BUCKETS = {"enrollment": {0}, "duration": {-1}, "sites_per_trial": {0}}


def color_for(kind: str | None, value: Any) -> str:
    """The colour of one category of a kind (grey for missing values, the accent for uncoloured kinds)."""
    if value is None:
        return NOT_GIVEN
    if kind is None:
        return ACCENT
    return COLORS.get(kind, {}).get(value, ACCENT)


@dataclass(frozen=True)
class ChartSpec:
    """One chart of the Explore page: which facet, how it is drawn, and what an empty chart means."""

    facet: str
    title: str
    style: str  # "bar" (vertical), "hbar" (ranked list), "timeline", "enrollment", "rate"
    color_kind: str | None = None
    empty: str = "No matching trials."
    note: str = ""
    max_rows: int = 0  # a ranked list longer than this shows its top rows only (0 = all)
    sentence_case: bool = False  # free text stored lower-case (stop reasons) gets a capital first letter
    two_line: bool = False  # "lead → collaborator" labels on two lines

    @property
    def clickable(self) -> bool:
        """Whether a click on this chart adds a filter."""
        return FACETS[self.facet].get("filter") is not None


NOT_CLICKABLE = "Not clickable: "


def _no_click(reason: str) -> str:
    """The visible note of a chart a click cannot filter on, saying why."""
    return f"{NOT_CLICKABLE}{reason}."


_CLOSED_NOTE = "Closed trials that match every other filter (the status filter does not apply here)."

# The charts in page order (SPEC §5.1): every facet of stats.FACETS appears once.
CHARTS: tuple[ChartSpec, ...] = (
    ChartSpec("phase", "Phase", "hbar", "phase", "No matching trials.",
              "A Phase 1/Phase 2 trial counts in both phases."),
    ChartSpec("status", "Recruitment status", "hbar", "status", "No matching trials."),
    ChartSpec("conditions", "Top conditions", "hbar", None,
              "No matching trial names a MeSH heading.",
              "MeSH headings of the trials' conditions, spellings folded into one (top 15); a click searches "
              "the heading and its narrower ones."),
    ChartSpec("therapeutic_areas", "Therapeutic areas (MeSH categories)", "hbar", None,
              "No matching trial names a MeSH heading.",
              "A trial counts in every area one of its MeSH headings lies in (C04 Neoplasms = Oncology, …; "
              "data/mesh/therapeutic_areas.csv)."),
    ChartSpec("lead_sponsors", "Top lead sponsors", "hbar", None,
              "No matching trial names a lead sponsor.", "Top 15 by number of trials."),
    ChartSpec("funder_class", "Funder class (lead sponsor)", "hbar", "funder_class",
              "No matching trial names a lead sponsor."),
    ChartSpec("study_type", "Study type", "bar", "study_type", "No matching trials."),
    ChartSpec("enrollment", "Enrollment size (actual vs anticipated)", "enrollment", "series",
              "No matching trials.", "Anticipated = planned enrollment of trials still running."),
    ChartSpec("sex", "Sex eligibility", "bar", "sex", "No matching trials.",
              "A click sets the patient's sex filter (trials open to everyone still match)."),
    ChartSpec("age_groups", "Age groups accepted", "bar", "age_group",
              "No matching trials.", "As ClinicalTrials.gov defines them: child 0–17, adult 18–64, older "
                                     "adult "
              "65+, from the trial's minimum and maximum age. A trial open to several age groups counts in "
              "each; a click sets the age-group filter."),
    ChartSpec("duration", "Trial duration", "bar", None, "No matching trials.",
              "From start to primary completion: planned for running trials, actual for finished ones. "
              + _no_click("there is no duration filter")),
    ChartSpec("intervention_types", "Intervention types", "hbar", "intervention_type",
              "No matching trial lists an intervention.", "A trial with several types counts in each; a "
              "click sets the intervention-type filter."),
    ChartSpec("interventions", "Top interventions", "hbar", None,
              "No matching trial lists an intervention.", "Placebo left out; top 15."),
    ChartSpec("start_year", "Start year", "timeline", None,
              "No matching trial gives a start date.", "Includes planned start dates."),
    ChartSpec("sites_per_trial", "Sites per trial", "bar", None, "No matching trials.",
              _no_click("there is no filter on the number of sites")),
    ChartSpec("countries", "Countries", "hbar", None,
              "No matching trial lists a site country.", "Trials with a site in each country (top 25)."),
    ChartSpec("us_states", "US states", "hbar", None,
              "No matching trial has a site in the United States.", "Trials with a site in each state (top 25).",
              max_rows=25),
    ChartSpec("outcome", "How closed trials ended", "hbar", "status",
              "No completed, terminated, withdrawn or suspended trial matches the other filters.", _CLOSED_NOTE),
    ChartSpec("why_stopped", "Top reasons for stopping", "hbar", None,
              "No closed trial that matches gives a reason for stopping.",
              _CLOSED_NOTE + " " + _no_click("reasons are free text, and there is no filter on them"),
              sentence_case=True),
    ChartSpec("stop_categories", "Why trials stopped (grouped)", "hbar", None,
              "No closed trial that matches gives a reason for stopping.",
              _CLOSED_NOTE + " Each reason in one category by its cue words (data/ctgov/stop_reasons.csv: "
                             "the first category whose cue it contains; none: Other). "
              + _no_click("there is no filter on them")),
    ChartSpec("results_by_year", "Results reported, by completion year", "rate", None,
              "No completed or terminated trial matching the other filters has a completion date.",
              "Bars: completed or terminated trials; line: share with results posted. " + _CLOSED_NOTE + " "
              + _no_click("there is no completion-year filter; Study design → Results posted filters on results")),
    ChartSpec("collaboration", "Sponsor collaborations", "hbar", None,
              "No matching trial lists a collaborator.",
              "Top lead sponsor → collaborator pairs; a click filters on the lead sponsor.", two_line=True),
    ChartSpec("collaboration_mix", "Collaborators per trial", "bar", None, "No matching trials.",
              _no_click("there is no filter on the number of collaborators")),
)
CHART_BY_FACET = {c.facet: c for c in CHARTS}


def _shown(label: Any) -> str:
    """A record's label as Plotly shows it (control characters dropped), to be shortened before it is escaped with
    inert.plotly_text: a cut then counts the characters a reader sees and never splits an entity ("&amp;")."""
    return html.unescape(inert.plotly_text(label))


def short_label(text: str, limit: int = LABEL_CHARS) -> str:
    """A label cut to `limit` characters with an ellipsis."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def distinct_labels(labels: Sequence[str], limit: int = LABEL_CHARS) -> list[str]:
    """Shortened labels that stay tellable apart: where several long labels would cut to the same text, each shows
    its beginning, an ellipsis and the part where it differs from the others ("AST2303 Tab…(ABK3376-02) 5 mg").

    Labels identical even in full get a visible running number.
    """
    texts = [" ".join(str(t).split()) for t in labels]
    cut = [short_label(t, limit) for t in texts]
    groups: dict[str, list[int]] = {}
    for i, c in enumerate(cut):
        groups.setdefault(c, []).append(i)
    head = max(4, limit // 3)
    width = limit - head - 2
    out = list(cut)
    for members in groups.values():
        if len(members) < 2:
            continue
        for i in members:
            text = texts[i]
            differs = max(len(os.path.commonprefix([text, texts[j]])) for j in members if j != i)
            if len(text) <= limit or differs < head:
                continue
            start = max(head, min(differs - 3, len(text) - width))
            tail = text[start:start + width]
            out[i] = text[:head].rstrip() + "…" + tail.strip() + ("…" if start + width < len(text) else "")
    seen: dict[str, int] = {}
    for i, tick in enumerate(out):
        seen[tick] = seen.get(tick, 0) + 1
        if seen[tick] > 1:
            out[i] = f"{tick} #{seen[tick]}"
    return out


def _frame(title: str, height: int) -> dict[str, Any]:
    """The layout every chart shares: title at the left, fixed axes (no zoom), clicks select."""
    return {
        "title": {"text": title, "x": 0, "xanchor": "left", "font": {"size": 15}},
        "height": height, "margin": {"l": 8, "r": 16, "t": 44, "b": 8}, "showlegend": False,
        "bargap": 0.25, "hoverlabel": {"namelength": -1}, "clickmode": "event+select", "dragmode": False,
        "xaxis": {"automargin": True, "fixedrange": True}, "yaxis": {"automargin": True, "fixedrange": True},
    }


# A horizontal legend at the foot of the figure, clear of the title and of tilted axis labels.
_LEGEND_BELOW: dict[str, Any] = {
    "showlegend": True, "margin": {"b": 52},
    "legend": {"orientation": "h", "x": 0, "xanchor": "left", "yref": "container", "y": 0.0, "yanchor": "bottom",
               "font": {"size": 11}},
}


def _merged(*parts: Mapping[str, Any]) -> dict[str, Any]:
    """Layout parts merged in order: later values win, nested dicts merge key by key (as update_layout does)."""
    out: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if isinstance(value, Mapping) and isinstance(out.get(key), dict):
                out[key] = _merged(out[key], value)
            else:
                out[key] = value
    return out


def _figure(traces: Sequence[Any], title: str, height: int, *layout: Mapping[str, Any]) -> go.Figure:
    """A figure made in one go: the common frame merged with the chart's own layout parts.

    Plotly validates a layout when the figure is made; every later update_layout/update_xaxes walked and checked it
    again, which was ~70% of the time to build a chart (~20 ms each, ~22 charts for every new Explore view).
    """
    return go.Figure(data=list(traces), layout=_merged(_frame(title, height), *layout))


# Each chart starts with margins wide enough for its tick labels, so Plotly's automargin finds nothing to push and
# draws the chart once instead of twice (the second draw was ~0.4 s of the browser's time for Explore's 22 charts
# at a server start, measured with `bench start`); where the estimate falls short, automargin still widens it.
_NARROW = frozenset("iljtfrI.,:;'!|()[]{} ")
_WIDE = frozenset("mwMW%@")
TICK_PAD_PX = 18  # what automargin adds to the labels' width
NUMBER_AXIS_PX = 84  # a value axis with its title ("Trials") and ticks up to "100k"


def label_px(tick: str, size: int) -> int:
    """A generous width in pixels of a tick label (its longest line, plotly <br> between lines) at font `size`:
    character widths in ems of a sans-serif face (5-15% wider than the browser draws them), rounded up."""
    def line_em(line: str) -> float:
        return sum(0.3 if ch in _NARROW else 0.85 if ch in _WIDE else 0.62 if ch.isupper() else 0.53
                   for ch in html.unescape(line))
    return math.ceil(max(line_em(line) for line in tick.split("<br>")) * size)


def wrap_label(text: str, width: int = 14, lines: int = 2) -> str:
    """A short category label broken into at most `lines` lines of about `width` characters (plotly <br>), each
    line escaped (inert.plotly_text)."""
    words = " ".join(str(text).split()).split(" ")
    out: list[str] = []
    current = ""
    for word in words:
        if current and len(current) + 1 + len(word) > width:
            out.append(current)
            current = word
        else:
            current = f"{current} {word}".strip()
    out.append(current)
    if len(out) > lines:
        out = out[: lines - 1] + [short_label(" ".join(out[lines - 1:]), width)]
    return "<br>".join(inert.plotly_text(line) for line in out)


def empty_figure(title: str, message: str, height: int = 220) -> go.Figure:
    """A chart frame that says why there is nothing to draw."""
    note = {"text": message, "x": 0.5, "y": 0.5, "xref": "paper", "yref": "paper", "showarrow": False,
            "font": {"size": 13, "color": "#5F6B7A"}, "align": "center"}
    return _figure([], title, height, {"annotations": [note], "xaxis": {"visible": False},
                                       "yaxis": {"visible": False}})


def _colors(spec: ChartSpec, rows: Sequence[Mapping[str, Any]]) -> list[str]:
    no_data = _NO_DATA_BUCKETS.get(spec.facet, set())  # color_for greys a missing value itself
    return [NOT_GIVEN if r.get("value") in no_data else color_for(spec.color_kind, r.get("value"))
            for r in rows]


def bar_figure(spec: ChartSpec, rows: Sequence[Mapping[str, Any]]) -> go.Figure:
    """Vertical bars in the facet's own order (phases, buckets, categories)."""
    texts = [_shown(r["label"]) for r in rows]
    labels = [inert.plotly_text(t) for t in texts]  # record text: no Plotly HTML can form
    bar = go.Bar(
        x=[wrap_label(t) for t in texts], y=[int(r["count"]) for r in rows],
        marker={"color": _colors(spec, rows)},
        customdata=[[r.get("value"), lab] for r, lab in zip(rows, labels, strict=True)],
        text=[f"{int(r['count']):,}" for r in rows], textposition="outside", cliponaxis=False,
        hovertemplate="%{customdata[1]}<br><b>%{y:,}</b> trials<extra></extra>",
    )
    # No fixed tick angle: plotly tilts the labels itself when the chart is too narrow for them.
    size = 11 if len(rows) <= 6 else 10
    lines = max((x.count("<br>") + 1 for x in bar.x), default=1)
    return _figure([bar], spec.title, 330, {
        "margin": {"b": math.ceil(lines * size * 1.3) + TICK_PAD_PX},
        "yaxis": {"title": None, "rangemode": "tozero", "showticklabels": False, "showgrid": False},
        "xaxis": {"title": None, "type": "category", "tickfont": {"size": size}},
        "bargap": _gap(len(rows)),
    })


def hbar_figure(spec: ChartSpec, rows: Sequence[Mapping[str, Any]]) -> go.Figure:
    """A ranked list as horizontal bars, largest on top, long labels shortened."""
    texts = [_shown(r["label"]) for r in rows]
    if spec.sentence_case:
        texts = [t[:1].upper() + t[1:] for t in texts]
    labels = [inert.plotly_text(t) for t in texts]  # record text: no Plotly HTML can form
    # Equal ticks would merge bars on a category axis and look alike: distinct_labels keeps them apart visibly.
    if spec.two_line:
        ticks = []
        for t in texts:
            if " → " in t:
                lead, other = (inert.plotly_text(short_label(x, LABEL_CHARS - 2)) for x in t.split(" → ", 1))
                ticks.append(f"{lead}<br>→ {other}")
            else:
                ticks.append(inert.plotly_text(short_label(t)))
        ticks = distinct_labels(ticks, limit=10_000)
    else:
        ticks = [inert.plotly_text(t) for t in distinct_labels(texts)]
    bar = go.Bar(
        y=ticks, x=[int(r["count"]) for r in rows], orientation="h",
        marker={"color": _colors(spec, rows)},
        customdata=[[r.get("value"), lab] for r, lab in zip(rows, labels, strict=True)],
        text=[f"{int(r['count']):,}" for r in rows], textposition="outside", cliponaxis=False,
        hovertemplate="%{customdata[1]}<br><b>%{x:,}</b> trials<extra></extra>",
    )
    per_bar = BAR_PX * 2 if spec.two_line else BAR_PX
    return _figure([bar], spec.title, 90 + per_bar * max(len(rows), 3), {
        # Room at the right for the longest bar's count ("123,600"), which is drawn past the bar's end.
        "margin": {"r": 64, "l": max((label_px(t, HBAR_TICK_PX) for t in ticks), default=0) + TICK_PAD_PX},
        "yaxis": {"title": None, "autorange": "reversed", "type": "category"},
        "xaxis": {"title": None, "rangemode": "tozero", "showticklabels": False, "showgrid": False},
        "bargap": _gap(len(rows)),
    })


def _gap(bars: int) -> float:
    """Wider gaps when there are few bars, so one or two bars do not fill the whole frame."""
    return 0.25 if bars >= 6 else 0.45 if bars >= 3 else 0.65


def timeline_figure(spec: ChartSpec, rows: Sequence[Mapping[str, Any]]) -> go.Figure:
    """Trials per start year as bars on a year axis."""
    bar = go.Bar(
        x=[int(r["value"]) for r in rows], y=[int(r["count"]) for r in rows],
        marker={"color": ACCENT}, customdata=[[r["value"], r["label"]] for r in rows],
        hovertemplate="Started in %{customdata[1]}<br><b>%{y:,}</b> trials<extra></extra>",
    )
    return _figure([bar], spec.title, 330, {
        "margin": {"l": NUMBER_AXIS_PX, "b": 40},
        "xaxis": {"title": None, "dtick": 5 if len(rows) > 12 else 1, "tickformat": "d"},
        "yaxis": {"title": "Trials", "rangemode": "tozero"},
    })


def enrollment_figure(spec: ChartSpec, rows: Sequence[Mapping[str, Any]]) -> go.Figure:
    """Enrollment-size buckets, one bar per enrollment type (actual, anticipated, not given)."""
    order = sorted({(int(r["value"]), str(r["label"])) for r in rows})
    categories = [label for _, label in order]
    bars = []
    for series in ("Actual", "Anticipated", "Type not given"):
        by_bucket = {int(r["value"]): int(r["count"]) for r in rows if r.get("series") == series}
        if not by_bucket:
            continue
        bars.append(go.Bar(
            name=series, x=categories, y=[by_bucket.get(v, 0) for v, _ in order],
            marker={"color": COLORS["series"][series]},
            customdata=[[v, f"{label} participants · {series.lower()}"] for v, label in order],
            hovertemplate="%{customdata[1]}<br><b>%{y:,}</b> trials<extra></extra>",
        ))
    return _figure(bars, spec.title, 350, {
        "xaxis": {"title": None, "type": "category", "categoryorder": "array", "categoryarray": categories},
        "yaxis": {"title": "Trials", "rangemode": "tozero"},
    }, _LEGEND_BELOW, {"barmode": "group", "bargap": _gap(len(categories)),
                       "margin": {"l": NUMBER_AXIS_PX, "r": 24, "b": 96}})


def rate_figure(spec: ChartSpec, rows: Sequence[Mapping[str, Any]]) -> go.Figure:
    """Finished trials per completion year (bars) and the share with results posted (line, right axis)."""
    years = [int(r["value"]) for r in rows]
    bars = go.Bar(
        x=years, y=[int(r["count"]) for r in rows], name="Finished trials", marker={"color": "#B8CCE4"},
        customdata=[[r["value"], r.get("with_results", 0)] for r in rows],
        hovertemplate="%{x}: <b>%{y:,}</b> finished, %{customdata[1]:,} with results<extra></extra>",
    )
    line = go.Scatter(
        x=years, y=[round(100 * float(r.get("rate", 0.0)), 1) for r in rows], name="With results (%)",
        yaxis="y2", mode="lines+markers", line={"color": RATE_LINE, "width": 2}, marker={"size": 5},
        customdata=[[r["value"]] for r in rows], hovertemplate="%{x}: <b>%{y}%</b> with results<extra></extra>",
    )
    return _figure([bars, line], spec.title, 350, _LEGEND_BELOW, {
        "margin": {"l": NUMBER_AXIS_PX, "r": NUMBER_AXIS_PX, "b": 68},
        "yaxis": {"title": "Finished trials", "rangemode": "tozero", "fixedrange": True},
        "yaxis2": {"title": "With results", "overlaying": "y", "side": "right", "range": [0, 104],
                   "tickvals": [0, 25, 50, 75, 100], "ticktext": ["0%", "25%", "50%", "75%", "100%"],
                   "showgrid": False, "fixedrange": True},
        "xaxis": {"dtick": 5 if len(rows) > 12 else 1, "tickformat": "d"},
    })


_BUILDERS = {"bar": bar_figure, "hbar": hbar_figure, "timeline": timeline_figure,
             "enrollment": enrollment_figure, "rate": rate_figure}


def facet_figure(facet: str, rows: Sequence[Mapping[str, Any]] | None, caption: str = "") -> go.Figure:
    """The figure of one facet, with `caption` (the filters) under its title; an explained empty frame when it
    has no rows."""
    spec = CHART_BY_FACET[facet]
    if not rows:
        return captioned(empty_figure(spec.title, spec.empty), caption)
    if spec.max_rows and len(rows) > spec.max_rows:
        rows = list(rows)[: spec.max_rows]
    return captioned(_BUILDERS[spec.style](spec, rows), caption)


def funnel_figure(funnel: Sequence[Mapping[str, Any]], caption: str = "") -> go.Figure:
    """The narrowing funnel: each stage adds one filter (condition → status → age → sex → place)."""
    if not funnel:
        return empty_figure("How the filters narrow the trials", "No funnel to show.")
    base = max(int(funnel[0]["count"]), 1)
    labels, counts, colors, texts = [], [], [], []
    for stage in funnel:
        active = bool(stage.get("active", True))
        n = int(stage["count"])
        labels.append(inert.plotly_text(stage["stage"]) + ("" if active else " (not set)"))
        counts.append(n)
        colors.append("#3E7CB1" if active else "#C9D6E6")
        texts.append(f"{n:,} ({100 * n / base:.0f}%)")
    funnel_trace = go.Funnel(
        y=labels, x=counts, text=texts, textinfo="text", marker={"color": colors},
        connector={"fillcolor": "#EDF1F6", "line": {"color": "#D5DCE5", "width": 1}},
        hovertemplate="%{y}: <b>%{x:,}</b> trials<extra></extra>",
    )
    return captioned(_figure([funnel_trace], "How the filters narrow the trials", 300, {
        "margin": {"l": max(label_px(lab, HBAR_TICK_PX) for lab in labels) + TICK_PAD_PX},
        "yaxis": {"type": "category"}}), caption)


FIGURE_CACHE_TTL_S = 600


class SharedFigure(go.Figure):
    """A figure shown unchanged to many visitors and reruns (see _shared); do not change it once shared.

    st.plotly_chart turns a figure into a dict on every call, and plotly's to_dict deep-copies every trace and
    the layout (~1-5 ms a chart, ~22 charts per Explore render): a shared figure makes that dict once.
    """

    def to_dict(self) -> dict[str, Any]:
        """The figure as a dict, made on the first call (the same object afterwards: read it, never change it)."""
        cached = self.__dict__.get("_shared_dict")
        if cached is None:
            cached = super().to_dict()
            self.__dict__["_shared_dict"] = cached
        return cached  # type: ignore[no-any-return]


def _share(fig: go.Figure) -> go.Figure:
    # The builders make plain figures (they stay plain for callers that change them); a figure going into the
    # shared cache becomes a SharedFigure in place, which adds behaviour only (no state), so nothing is copied.
    fig.__class__ = SharedFigure
    return fig


_figure_cache: SingleFlightCache[go.Figure] = SingleFlightCache(FIGURE_CACHE_TTL_S, max_entries=4096)


def _shared(kind: str, rows: Sequence[Mapping[str, Any]] | None, build: Callable[[], go.Figure]) -> go.Figure:
    # Building a figure costs 15-60 ms of CPU (plotly validates every property); the same rows always give the
    # same figure, so every visitor and rerun that shows them shares one object, keyed by a digest of the rows.
    digest = hashlib.blake2b(repr([sorted(r.items()) for r in rows or ()]).encode(), digest_size=16).digest()
    return _figure_cache.get_or_compute((kind, digest), lambda: _share(build()))


def shared_facet_figure(facet: str, rows: Sequence[Mapping[str, Any]] | None, caption: str = "") -> go.Figure:
    """facet_figure(facet, rows, caption) shared across visitors and reruns (same rows → same object): do not
    change it."""
    return _shared(f"{facet}\0{caption}", rows, lambda: facet_figure(facet, rows, caption))


def shared_funnel_figure(funnel: Sequence[Mapping[str, Any]], caption: str = "") -> go.Figure:
    """funnel_figure(funnel, caption) shared across visitors and reruns (same stages → same object): do not
    change it."""
    return _shared(f"__funnel__\0{caption}", funnel, lambda: funnel_figure(funnel, caption))


def clicked_values(fig: go.Figure, selection: Mapping[str, Any] | None) -> list[Any]:
    """Facet values of the points in a Streamlit plotly selection (curve + point index → customdata[0])."""
    if not selection:
        return []
    values: list[Any] = []
    for point in selection.get("points") or []:
        value: Any = None
        curve = point.get("curve_number", 0)
        index = point.get("point_index", point.get("point_number"))
        try:
            custom = fig.data[int(curve)].customdata
            if custom is not None and index is not None:
                value = custom[int(index)][0]
        except (IndexError, TypeError, ValueError):
            value = None
        if value is None and isinstance(point.get("customdata"), (list, tuple)) and point["customdata"]:
            value = point["customdata"][0]
        if hasattr(value, "item"):  # numpy scalars from plotly's arrays → plain Python values
            value = value.item()
        if value is not None and value not in values:
            values.append(value)
    return values


# ---- two landscapes side by side (Compare page) -------------------------------------------------
SIDE_COLORS = {"A": "#3E7CB1", "B": "#E07B39"}  # filter set A blue, B orange: the same on every compare chart
MEASURES = {"count": "Trials", "share": "Share (%)"}


def compare_figure(title: str, style: str, rows: Sequence[Any], measure: str = "count",
                   names: Mapping[str, str] | None = None) -> go.Figure:
    """Grouped bars of one section of a comparison (services/dashboard/compare.Row): A and B side by side.

    style "hbar" draws a ranked list as horizontal bars (A's order, then values only B has); any other style draws
    vertical bars in the section's order. measure "share" draws each side's share; a row without one (a key figure
    other than recruiting) draws no bar, its count on hover, since counts and percentages cannot share an axis — only
    a section where no row has a share draws counts. A count unknown on one side (outside its top list) draws no bar
    and says so on hover.
    """
    names = names or {"A": "A", "B": "B"}
    if not rows:
        return empty_figure(title, "Neither filter set has a value here.")
    if measure == "share" and all(r.a_share is None and r.b_share is None for r in rows):
        measure = "count"
    texts = [_shown(r.label) for r in rows]
    labels = [inert.plotly_text(t) for t in texts]
    ticks = ([inert.plotly_text(t) for t in distinct_labels(texts)] if style == "hbar"
             else [wrap_label(t) for t in texts])
    share_of = next((r.share_of for r in rows if r.share_of), "")
    traces = []
    for side in ("A", "B"):
        counts = [getattr(r, f"{side.lower()}_count") for r in rows]
        shares = [getattr(r, f"{side.lower()}_share") for r in rows]
        values = [None if s is None else round(100 * s, 1) for s in shares] if measure == "share" else counts
        hover = []
        for lab, n, s in zip(labels, counts, shares, strict=True):
            if n is None:
                hover.append(f"{lab}<br>not in {side}'s top list (not counted)")
            else:
                hover.append(f"{lab}<br><b>{n:,}</b>" + (f" ({100 * s:.1f} {share_of})" if s is not None else ""))
        text = [("" if v is None else f"{v:,.1f}%" if measure == "share" else f"{int(v):,}") for v in values]
        if style != "hbar" and len(rows) > 12:  # a long run of years: numbers on every bar would overlap (hover)
            text = [""] * len(rows)
        common = {"name": inert.plotly_text(names[side]), "marker": {"color": SIDE_COLORS[side]},
                  "customdata": [[r.value if not isinstance(r.value, tuple) else r.value[0], h]
                                 for r, h in zip(rows, hover, strict=True)],
                  "hovertemplate": "%{customdata[1]}<extra>" + side + "</extra>", "text": text,
                  "textposition": "outside", "cliponaxis": False}
        if style == "hbar":
            traces.append(go.Bar(y=ticks, x=values, orientation="h", **common))
        else:
            traces.append(go.Bar(x=ticks, y=values, **common))
    axis_title = MEASURES[measure] if measure == "count" else share_of or MEASURES[measure]
    top = max((v for t in traces for v in (t.x if style == "hbar" else t.y) if v is not None), default=0)
    if style == "hbar":
        return _figure(traces, title, 110 + 2 * BAR_PX * max(len(rows), 2), _LEGEND_BELOW, {
            "barmode": "group", "bargap": 0.2, "bargroupgap": 0.05,
            "yaxis": {"title": None, "autorange": "reversed", "type": "category"},
            # Room at the right for the longest bar's number ("100.0%" was cut off at the frame).
            "xaxis": {"title": None, "range": [0, (top or 1) * 1.18], "showticklabels": False, "showgrid": False},
        })
    many = len(rows) > 12
    return _figure(traces, title, 370, _LEGEND_BELOW, {
        "barmode": "group", "bargap": _gap(len(rows)), "bargroupgap": 0.05,
        "xaxis": {"title": None, "type": "category", "tickfont": {"size": 10 if many else 11}},
        "yaxis": {"title": axis_title, "rangemode": "tozero"},
    })


def compare_style(section: str) -> str:
    """How a comparison section is drawn: ranked lists horizontally, ordered categories and years vertically."""
    return "hbar" if section in ("kpis", "funnel") or CHART_BY_FACET[section].style == "hbar" else "bar"


def shared_compare_figure(title: str, section: str, rows: Sequence[Any], measure: str,
                          names: Mapping[str, str], caption: str = "") -> go.Figure:
    """compare_figure (with `caption` under its title) shared across visitors and reruns (same rows, measure,
    names and caption → same object)."""
    key = [asdict(r) for r in rows] + [{"measure": measure, "names": tuple(sorted(names.items())),
                                        "title": title, "caption": caption}]
    style = compare_style(section)
    return _shared(f"__compare_{section}__", key,
                   lambda: captioned(compare_figure(title, style, rows, measure, names), caption))
