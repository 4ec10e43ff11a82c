"""Explore page: KPIs, the narrowing funnel and every facet chart; clicking a bar adds that value to the
filters."""

import zlib
from dataclasses import fields
from urllib.parse import quote

import streamlit as st

from services import inert
from services.dashboard import chartimage, charts, export, showsql, stats
from services.dashboard.search import EXPORT_CAP, matching_trials
from services.ui import health, pages
from services.ui import state as ui_state

f = pages.start_filtered_page("Explore", "Explore the trial landscape",
                              caption_end=" Click a bar to add its value to the filters.")
in_area = " in the filter's area" if f.country or f.state or f.near else ""
caption = "Trial Landscape · " + " · ".join(f.describe())  # in every chart: an image says what it counts


def show_sql(name: str) -> None:
    """The SQL over the base tables that computes this number, to copy or to open in the SQL page."""
    item = sql_of[name]
    with st.expander("Show the SQL"):
        if item.note:
            st.caption(inert.md(item.note))
        if not item.sql:
            return
        st.code(item.sql, language="sql")
        st.markdown(
            f"[Open it in the SQL page ↗](SQL?sql={quote(item.sql, safe='')}) (it runs when you "
            "press **Run query** there)."
        )


# Progressive: the KPIs and the funnel first (their own quick queries where the facets are slow), then
# the charts one by one as they are drawn, with a spinner naming the wait in between — never a blank area.
with (
    health.database_errors(),
    ui_state.facets_loading_notice(),
    st.spinner("Counting the matching trials…", show_time=True),
):
    summary = stats.cached_dashboard(f)
    sql_of = ui_state.cached(showsql.dashboard_sql, f)

k = summary.kpis
# A wrapping row: five boxes side by side on a wide screen, on two lines when narrow (numbers never cut).
kpi_row = st.container(horizontal=True, gap="small")
for key, label, help_text in (
    ("matching_trials", "Matching trials", "Trials that pass every filter."),
    ("recruiting", "Recruiting now", "Matching trials whose status is Recruiting."),
    ("sites", "Sites", f"Trial sites (facilities) of the matching trials{in_area}."),
    ("countries", "Countries", f"Countries with at least one site of a matching trial{in_area}."),
    ("planned_enrollment", "Planned enrollment", "Sum of actual or anticipated enrollment."),
):
    kpi_row.metric(label, f"{k[key]:,}" if key in k else "—", help=help_text, border=True, width="stretch")
show_sql(showsql.KPIS)

note = ui_state.cached(stats.expansion_note, f)
if note:
    st.caption(inert.md_line(note))  # the typed condition is untrusted text: escaped, one line

left, right = st.columns([3, 2])
with right:
    st.markdown("**Share or download this view**")
    image_format = ui_state.image_format(st, "explore_image_format")
    st.caption("The share link in the sidebar (copy button at its right) reopens exactly these filters.")
    total = k.get("matching_trials", 0)
    capped = total > EXPORT_CAP
    st.caption(
        f"Exports hold every matching trial, at most {EXPORT_CAP:,} rows"
        + (
            f" — this view has {total:,}, so only the first {EXPORT_CAP:,} (newest start first) are included."
            if capped
            else f" ({total:,} here)."
        )
    )
    for col, fmt in zip(st.columns(2), export.FORMATS, strict=True):
        col.download_button(
            fmt.upper(),
            key=f"explore_{fmt}",
            disabled=total == 0,
            help=f"Download every matching trial as {fmt.upper()}",
            data=lambda fmt=fmt: export.to_bytes(matching_trials(f, limit=EXPORT_CAP), fmt),
            file_name=export.file_name(
                export.view_stem("explore-trials", f.query_string(), f.condition), fmt
            ),
            mime=export.FORMATS[fmt],
            icon="⬇️",
            width="stretch",
            on_click="ignore",
        )

with left:
    if "funnel" in summary.errors:
        st.warning(f"Funnel: {summary.errors['funnel']}.", icon="⏱️")
    else:
        st.plotly_chart(
            charts.shared_funnel_figure(summary.funnel, caption),
            key="explore_funnel",
            config=chartimage.image_config("trial-landscape-funnel", image_format),
        )
        show_sql(showsql.FUNNEL)

if k.get("matching_trials") == 0:
    st.info(
        "No trial matches these filters, so the charts below are empty. Remove a filter in the sidebar "
        "(or press **Reset filters**) to widen the view.",
        icon="🔎",
    )

with health.database_errors(), st.spinner("Computing the charts…", show_time=True):
    dash = summary if summary.facets or summary.errors else stats.cached_dashboard(f)
for note in dash.notices:
    st.caption(inert.md_line(note))
if dash.errors:
    failed = ", ".join(stats.FACETS[n]["title"] if n in stats.FACETS else n for n in sorted(dash.errors))
    st.warning(
        f"Some numbers could not be computed in time ({failed}); the rest of the page is complete.", icon="⏱️"
    )
    st.button("Try those again", key="explore_retry")

# Chart keys carry the filter, so a new filter gives fresh charts without a stale selection.
view = zlib.crc32(f.query_string().encode()) & 0xFFFFFFFF
for start in range(0, len(charts.CHARTS), 2):
    for col, spec in zip(st.columns(2), charts.CHARTS[start : start + 2], strict=False):
        with col.container(border=True):
            if spec.facet in dash.errors:
                st.markdown(f"**{spec.title}**")
                st.warning(
                    f"{dash.errors[spec.facet]} — this chart could not be computed; the others are complete.",
                    icon="⏱️",
                )
                continue
            rows = dash.facets.get(spec.facet, [])
            fig = charts.shared_facet_figure(spec.facet, rows, caption)
            image = chartimage.image_config(f"trial-landscape-{spec.facet}", image_format)
            if spec.clickable and rows:
                event = st.plotly_chart(
                    fig,
                    key=f"chart_{spec.facet}_{view}",
                    on_select="rerun",
                    selection_mode="points",
                    config=image,
                )
                new = f
                for value in charts.clicked_values(fig, event.get("selection")):
                    new = stats.filter_for_click(new, spec.facet, value)
                if new != f:
                    ui_state.update_filters(
                        **{
                            x.name: getattr(new, x.name)
                            for x in fields(new)
                            if getattr(new, x.name) != getattr(f, x.name)
                        }
                    )
                    st.rerun()
            else:
                st.plotly_chart(fig, key=f"chart_{spec.facet}", config=image)
            note = spec.note
            if spec.max_rows and len(rows) > spec.max_rows:
                note = f"Top {spec.max_rows} of {len(rows)} shown. " + note
            if note:
                st.caption(note)
            show_sql(spec.facet)

ui_state.footer()
