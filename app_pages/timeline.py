"""Timeline page: the matching trials on a time axis (bars, or trials active per quarter when many) and benchmarks for
planning a trial (enrollment, duration, sites, enrollment per site per month, terminations) by phase."""

import datetime as dt

import streamlit as st

from services import inert
from services.dashboard import chartimage, charts, export, planning, timechart, timeline
from services.ui import health, pages
from services.ui import state as ui_state

f = pages.start_filtered_page("Timeline", "Timeline and planning benchmarks")
today = dt.date.today()

st.subheader("Timeline", anchor="timeline")
c1, c2 = st.columns(2)
ui_state.view_widget("tl_colour", "colour_by", "phase", lambda v: v if v in timeline.COLOR_BY else None)
colour_by = c1.radio("Colour by", timeline.COLOR_BY, horizontal=True, key="tl_colour",
                     format_func=lambda v: "Phase" if v == "phase" else "Status")
ui_state.set_view_param("colour_by", colour_by, "phase")
ui_state.view_widget("tl_group", "group_by", "sponsor", lambda v: v if v in timeline.GROUPS else None)
group_by = c2.radio("Group and sort by", timeline.GROUPS, horizontal=True, key="tl_group",
                    format_func=lambda v: "Lead sponsor" if v == "sponsor" else "Phase",
                    help="Bars only: trials grouped by lead sponsor (most trials first) or phase, each group by "
                         "start date.")
ui_state.set_view_param("group_by", group_by, "sponsor")
image_format = ui_state.image_format(st, "timeline_image_format")
image = chartimage.image_config("trial-landscape-timeline", image_format)
caption = "Trial Landscape · " + " · ".join(f.describe())

with health.database_errors(), st.spinner("Reading the matching trials' dates…", show_time=True):
    tl = ui_state.cached(timeline.timeline, f, group_by, colour_by)

if tl.total == 0:
    st.info("No trial matches these filters. Remove a filter in the sidebar to widen the view.", icon="🔎")
elif tl.mode == "bars":
    st.caption(f"{tl.total:,} matching trials (at most {timeline.BAR_LIMIT:,}): one row per trial — thick from start "
               "to primary completion, thin on to study completion. Click a bar (or an NCT id) to open the trial. "
               + timeline.excluded_note(tl))
    fig = chartimage.captioned(timechart.gantt_figure(tl.bars, colour_by, group_by, today), caption)
    box = st.container(height=760) if fig.layout.height and fig.layout.height > 760 else st.container()
    with box:
        event = st.plotly_chart(fig, key=f"timeline_gantt_{colour_by}_{group_by}", on_select="rerun",
                                selection_mode="points", config=image)
    clicked = charts.clicked_values(fig, event.get("selection") if event else None)
    if clicked:
        st.switch_page(pages.st_page("Trials"), query_params={"nct": str(clicked[0])})
else:
    st.caption(f"{tl.total:,} matching trials — more than {timeline.BAR_LIMIT:,}, too many for one bar each — so "
               f"this counts the trials active in each quarter, by phase ({tl.shown:,} trials counted): from the "
               "start quarter to the completion quarter (primary completion when no completion date is given). "
               "Quarters after today count trials by their planned dates. " + timeline.excluded_note(tl)
               + " Narrow the filters to see each trial.")
    st.plotly_chart(chartimage.captioned(timechart.active_figure(tl.active, today), caption),
                    key="timeline_active", config=image)

st.subheader("Benchmarks for planning", anchor="benchmarks")
with health.database_errors(), st.spinner("Computing the benchmarks…", show_time=True):
    plan = ui_state.cached(planning.benchmarks, f)
t = plan.totals
if not t.get("trials"):
    st.info("No trial matches these filters (any status). Remove a filter in the sidebar.", icon="🔎")
else:
    st.caption(f"{t['trials']:,} trials match every filter but status (any status counts here). Each cell: median "
               "(25th–75th percentile); the n beside it is the number of trials behind it.")
    shown = planning.display_table(plan.table)
    n_cols = {c: st.column_config.NumberColumn("n", width="small", format="localized",
                                                help=f"Trials behind the number at the left ({c[3:-1]})")
              for c in shown.columns if c.startswith("n (")}
    st.dataframe(shown, hide_index=True, width="stretch", key="planning_table",
                 column_config={"Phase": st.column_config.TextColumn("Phase", width="medium", pinned=True),
                                "Trials": st.column_config.NumberColumn("Trials", width="small", format="localized"),
                                **n_cols})
    st.markdown("**Left out**\n\n" + "\n".join(f"- {inert.md_line(line)}" for line in plan.excluded))
    st.caption(planning.METHOD)
    share = f" ({t['terminated'] / t['closed']:.1%})" if t["closed"] else ""
    st.markdown(f"**Terminated:** {t['terminated']:,} of {t['closed']:,} closed trials{share}. "
                "Why they stopped (reasons as registered, grouped as on Explore):")
    if plan.reasons.empty:
        st.caption("No matching trial was terminated.")
    else:
        st.dataframe(plan.reasons, hide_index=True, width="stretch", key="planning_reasons",
                     column_config={"reason": st.column_config.TextColumn("Reason", width="large"),
                                    "trials": st.column_config.NumberColumn("Trials", format="%d"),
                                    "share": st.column_config.NumberColumn("Share of terminated",
                                                                           format="percent")})
    cols = st.columns(4)
    for i, (stem, frame) in enumerate((("benchmarks", plan.table), ("stop_reasons", plan.reasons))):
        for j, fmt in enumerate(export.FORMATS):
            cols[i * 2 + j].download_button(
                f"{'Benchmarks' if stem == 'benchmarks' else 'Stop reasons'} {fmt.upper()}", key=f"dl_{stem}_{fmt}",
                data=export.to_bytes(frame, fmt), file_name=export.file_name(stem, fmt), mime=export.FORMATS[fmt],
                icon="⬇️", width="stretch", on_click="ignore")
ui_state.footer()
