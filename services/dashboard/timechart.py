"""Pure chart builders for the Timeline page: a Gantt chart of a few hundred trials and the quarters' stacked bars.

Nothing here touches Streamlit or the database. The Gantt's bars carry the trial's NCT id in `customdata[0]`
(a click opens the trial, as charts.clicked_values reads it) and each row's label links to the Trials page.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from services import inert
from services.dashboard.charts import COLORS, color_for, empty_figure, short_label
from services.dashboard.timeline import phase_key, phase_label, quarter_label, quarter_of, quarter_start
from services.data.normalize import label

NCT = re.compile(r"NCT\d{8}")
ROW_PX = 18  # height of one trial's row in the Gantt chart
LABEL_PX = 250  # width of the Gantt's left margin, where the row labels are
# Colours of phase combinations (between their parts' colours), beside charts.COLORS["phase"].
COMBINED_PHASES = {"PHASE1/PHASE2": "#4F8FC6", "PHASE2/PHASE3": "#28639F"}
# How a segment's dates are drawn: solid when actual, hatched when estimated, dotted when no type is given.
MARK_STYLE: dict[str, dict[str, Any]] = {
    "actual": {"opacity": 1.0, "pattern": {"shape": ""}},
    "estimated": {"opacity": 0.7, "pattern": {"shape": "/", "fgcolor": "#FFFFFF", "size": 6, "solidity": 0.4}},
    "unknown": {"opacity": 0.85, "pattern": {"shape": ".", "fgcolor": "#FFFFFF", "size": 5, "solidity": 0.35}},
}
MARK_LEGEND = {"actual": "Solid: actual dates", "estimated": "Hatched: estimated (planned) dates",
               "unknown": "Dotted: date type not given"}
TAIL_SHARE = 0.01  # the aggregated chart first shows the quarters with at least this share of the busiest one
PART_WIDTH = {"primary": 0.8, "whole": 0.8, "follow-up": 0.4}  # start → primary completion thick, → completion thin
PART_WORDS = {"primary": "Start → primary completion", "whole": "Start → completion (no primary completion date)",
              "follow-up": "Primary completion → completion"}


def trial_link(nct_id: str, text: str) -> str:
    """A link to the trial on the Trials page (the Map tables' `Trials?nct=` link) in plotly's pseudo-HTML; the
    text is registry text made inert; an id that is not an NCT id gets no link."""
    shown = inert.plotly_text(text)
    return f'<a href="Trials?nct={nct_id}" target="_self">{shown}</a>' if NCT.fullmatch(nct_id) else shown


def _color(kind: str, value: str) -> str:
    if kind == "phase":
        return COMBINED_PHASES.get(value) or color_for("phase", value)
    return color_for("status", value)


def _color_label(kind: str, value: str) -> str:
    return phase_label(value) if kind == "phase" else label("status", value)


def gantt_figure(bars: pd.DataFrame, color_by: str, group_by: str, today: dt.date) -> go.Figure:
    """One row per trial under a header row per group, a thick bar from start to primary completion and a thin one
    on to completion; colour by phase or status; solid, hatched or dotted by the dates' type; the row label links to
    the trial and a bar carries its NCT id (customdata) for a click."""
    if bars.empty:
        return empty_figure("", "No matching trial has the dates for a bar.", height=160)
    first = bars.drop_duplicates("nct_id").sort_values("row")
    # y position: the trial's row plus one header row for its group and each group before it
    group_no = {g: i for i, g in enumerate(dict.fromkeys(first["group"]))}
    y_of = {n: int(r) + group_no[g] + 1 for n, r, g in zip(first["nct_id"], first["row"], first["group"], strict=True)}
    n_rows = len(first) + len(group_no)
    traces: list[go.Bar] = []
    colors = sorted(bars["color"].unique(), key=phase_key if color_by == "phase" else
                    (lambda v: list(COLORS["status"]).index(v) if v in COLORS["status"] else 99))
    for value in colors:
        color = _color(color_by, value)
        for mark in ("actual", "estimated", "unknown"):
            for part in PART_WIDTH:
                seg = bars[(bars["color"] == value) & (bars["mark"] == mark) & (bars["part"] == part)]
                if seg.empty:
                    continue
                hover = [f"<b>{inert.plotly_text(n)}</b> {inert.plotly_text(short_label(t or '', 70))}<br>"
                         f"{PART_WORDS[p]}: "
                         f"{s} → {e} ({m} dates)<br>{phase_label(ph)} · {label('status', st)}"
                         for n, t, p, s, e, m, ph, st in zip(seg["nct_id"], seg["title"], seg["part"], seg["start"],
                                                              seg["end"], seg["mark"], seg["phase"], seg["status"],
                                                              strict=True)]
                traces.append(go.Bar(
                    orientation="h", y=[y_of[n] for n in seg["nct_id"]], base=[str(s) for s in seg["start"]],
                    x=[(pd.Timestamp(e) - pd.Timestamp(s)) / pd.Timedelta(milliseconds=1)
                       for s, e in zip(seg["start"], seg["end"], strict=True)],
                    width=PART_WIDTH[part], customdata=[[n] for n in seg["nct_id"]],
                    marker=_marker(color, mark), name=_color_label(color_by, value), legendgroup=f"c:{value}",
                    showlegend=False, hovertext=hover, hoverinfo="text"))
    legend = [go.Bar(orientation="h", x=[None], y=[None], name=_color_label(color_by, v), legendgroup=f"c:{v}",
                     marker=_marker(_color(color_by, v), "actual"), hoverinfo="skip", showlegend=True)
              for v in colors]
    legend += [go.Bar(orientation="h", x=[None], y=[None], name=MARK_LEGEND[m], legendgroup=f"m:{m}",
                      marker=_marker("#5E6675", m), hoverinfo="skip", showlegend=True)
               for m in ("actual", "estimated", "unknown") if (bars["mark"] == m).any()]
    # The row labels are annotations in the margin, not tick labels: plotly draws annotations on its top layer,
    # where a link is clickable (tick labels lie under the chart's event layer).
    labels: list[dict[str, Any]] = []
    shapes: list[dict[str, Any]] = []
    for group, members in first.groupby("group", sort=False):
        top = min(y_of[n] for n in members["nct_id"]) - 1
        name = phase_label(str(group)) if group_by == "phase" else str(group)
        labels.append(_row_label(top, f"<b>{inert.plotly_text(short_label(name, 40))}</b> ({len(members)})"))
        for n, t in zip(members["nct_id"], members["title"], strict=True):
            labels.append(_row_label(y_of[n], trial_link(n, f"{n} · {short_label(t or '', 28)}")))
        if group_no[group] % 2 == 0:
            shapes.append({"type": "rect", "xref": "paper", "x0": 0, "x1": 1, "yref": "y", "y0": top - 0.5,
                           "y1": top + len(members) + 0.5, "fillcolor": "#EEF2F7", "line": {"width": 0},
                           "layer": "below"})
    shapes.append({"type": "line", "xref": "x", "x0": str(today), "x1": str(today), "yref": "paper", "y0": 0,
                   "y1": 1, "line": {"color": "#C8323C", "width": 1, "dash": "dot"}})
    notes = [*labels, {"text": "today", "xref": "x", "x": str(today), "yref": "paper", "y": 0, "yanchor": "top",
                       "showarrow": False, "font": {"size": 10, "color": "#C8323C"}}]
    height = max(300, 150 + ROW_PX * n_rows)
    # The axis spans the bars drawn (and today), a month either side: left to autorange, plotly also counted
    # each bar's length as a date since 1970 (a 30-year trial "ended" in 2000), and the axis ran far past the
    # trials.
    ends = [pd.to_datetime(bars["start"]).min(), pd.to_datetime(bars["end"]).max(), pd.Timestamp(today)]
    month = pd.Timedelta(days=31)
    x_range = [str((min(ends) - month).date()), str((max(ends) + month).date())]
    return go.Figure(data=[*traces, *legend], layout={
        "height": height, "barmode": "overlay", "dragmode": False, "clickmode": "event+select",
        "hoverlabel": {"namelength": -1}, "margin": {"l": LABEL_PX, "r": 8, "t": 120, "b": 24},
        "xaxis": {"type": "date", "side": "top", "fixedrange": True, "gridcolor": "#E5E9F0", "range": x_range,
                  "autorange": False},
        "yaxis": {"showticklabels": False, "showgrid": False, "zeroline": False, "range": [n_rows - 0.5, -0.5],
                  "fixedrange": True},
        "shapes": shapes, "annotations": notes, "showlegend": True,
        "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": 1.0, "yref": "container", "yanchor": "top",
                   "font": {"size": 11}, "traceorder": "normal"},
    })


def _row_label(y: int, text: str) -> dict[str, Any]:
    """A row's label in the left margin (an annotation, so that its link can be clicked)."""
    return {"text": text, "xref": "paper", "x": 0, "xanchor": "right", "xshift": -6, "yref": "y", "y": y,
            "yanchor": "middle", "showarrow": False, "font": {"size": 10}, "align": "right"}


def _marker(color: str, mark: str) -> dict[str, Any]:
    """A bar's fill: the colour solid (actual), or under white hatching (estimated) or dots (type not given)."""
    style = MARK_STYLE[mark]
    pattern = dict(style["pattern"])
    if pattern.get("shape"):
        pattern.update({"bgcolor": color, "fillmode": "replace"})
    return {"color": color, "opacity": style["opacity"], "pattern": pattern, "line": {"width": 0}}


def active_figure(active: pd.DataFrame, today: dt.date) -> go.Figure:
    """Trials active in each quarter, stacked by phase, with today's quarter marked (later quarters count trials
    by their planned dates)."""
    if active.empty:
        return empty_figure("", "No matching trial has a start and an end date.", height=160)
    traces = []
    for phase in sorted(active["phase"].unique(), key=phase_key):
        part = active[active["phase"] == phase]
        traces.append(go.Bar(x=[quarter_start(int(q)).isoformat() for q in part["quarter"]], y=part["active"].tolist(),
                             name=phase_label(phase), marker={"color": _color("phase", phase), "line": {"width": 0}},
                             customdata=[[lab] for lab in part["label"]],
                             hovertemplate="%{customdata[0]}: %{y:,} active<extra>" + inert.plotly_text(phase_label(phase))
                                           + "</extra>"))
    quarters = sorted(int(q) for q in active["quarter"].unique())
    now = quarter_of(today)
    shapes, notes = [], []
    totals = active.groupby("quarter")["active"].sum()
    busy = totals[totals >= TAIL_SHARE * totals.max()].index
    lo, hi = int(busy.min()), int(busy.max())
    x_range = None
    if lo > quarters[0] or hi < quarters[-1]:  # long thin tails (a few trials dated decades away) squash the rest
        x_range = [str(quarter_start(lo) - dt.timedelta(days=46)), str(quarter_start(hi) + dt.timedelta(days=46))]
        notes.append({"text": f"Shown: {quarter_label(lo)} – {quarter_label(hi)}, the quarters with at least "
                              f"{TAIL_SHARE:.0%} of the busiest one's trials (data run {quarter_label(quarters[0])} – "
                              f"{quarter_label(quarters[-1])}). Drag to zoom; double-click for all.",
                      "xref": "paper", "x": 1.0, "xanchor": "right", "yref": "paper", "y": 1.0, "yanchor": "bottom",
                      "showarrow": False, "font": {"size": 10, "color": "#4C566A"}})
    if quarters[0] <= now <= quarters[-1]:
        shapes.append({"type": "line", "xref": "x", "x0": str(today), "x1": str(today), "yref": "paper", "y0": 0,
                       "y1": 1, "line": {"color": "#C8323C", "width": 1.5, "dash": "dot"}})
        notes.append({"text": "today → planned dates", "xref": "x", "x": str(today), "xanchor": "left",
                      "yref": "paper", "y": 0.98, "yanchor": "top", "showarrow": False,
                      "font": {"size": 10, "color": "#C8323C"}})
    return go.Figure(data=traces, layout={
        "height": 460, "barmode": "stack", "bargap": 0.05, "dragmode": "zoom",
        "margin": {"l": 8, "r": 8, "t": 30, "b": 8}, "hoverlabel": {"namelength": -1},
        "xaxis": {"type": "date", "automargin": True, "range": x_range, "autorange": x_range is None,
                  "title": {"text": "Quarter (one bar per quarter)"}},
        "yaxis": {"title": {"text": "Trials active"}, "automargin": True, "fixedrange": True},
        "shapes": shapes, "annotations": notes, "showlegend": True,
        "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": -0.18, "yanchor": "top", "font": {"size": 11},
                   "traceorder": "normal"},
    })
