"""Compare page: filter set A (the sidebar) and filter set B (edited here) side by side — every KPI, funnel
stage and facet of Explore as A, B and the difference, as grouped bars and one exportable table."""

import streamlit as st

from services import inert
from services.dashboard import chartimage, charts, compare, export, stats
from services.ui import comparison, health
from services.ui import state as ui_state

health.ensure_database()
fa = ui_state.page_setup("Compare")
fb = comparison.current_b()
ui_state.view_widget("compare_measure", "bars", "count", lambda v: v if v in charts.MEASURES else None)
# B's notices (a link's b. parameters that were not understood) and the bars setting's
ui_state.show_notices()
comparison.write_url(fb)
names = {"A": "A (sidebar)", "B": "B (this page)"}

st.title("⚖️ Compare two landscapes")
st.caption(
    "Filter set **A** is the sidebar's; filter set **B** is edited below. Every number of the Explore page "
    "is shown for both, with the difference B − A in trials and in percentage points of the shares."
)

left, right = st.columns([2, 3])
with left:
    for side, f, colour in (("A", fa, "blue"), ("B", fb, "orange")):
        with st.container(border=True):
            st.markdown(f":{colour}-badge[**{side}**] " + " · ".join(inert.md_line(x) for x in f.describe()))
    if fa == fb:
        st.info(
            "A and B are the same filters. Change B here (or press **Copy A to B** and change one filter) "
            "to compare.",
            icon="⚖️",
        )
    left_out = ui_state.shared_filters(fb)[1]  # B's patient answers the share link leaves out
    if left_out:
        st.caption(
            "B's share-link parameters leave out your answers to the assistant (" + ", ".join(left_out) + ")."
        )
with right, st.container(border=True):
    st.markdown("**Filter set B**")
    comparison.render_b_panel(st.container(), fb)

with (
    left,
    health.database_errors(),
    ui_state.facets_loading_notice(),
    st.spinner("Computing both landscapes…", show_time=True),
):
    c = compare.compare(fa, fb, stats.cached_dashboard)

# KPIs beside B's panel: per figure A, then B with its difference to A.
with left:
    for key, label in compare.KPIS:
        row = st.container(horizontal=True, gap="small")
        for side, d in (("A", c.a), ("B", c.b)):
            value = d.kpis.get(key)
            delta, diff = None, 0
            if side == "B" and value is not None and c.a.kpis.get(key) is not None:
                diff = value - c.a.kpis[key]
                delta = f"{diff:+,} vs A"  # "+0 vs A" for equal values, without an arrow (below)
            row.metric(
                f"{side} · {label}",
                f"{value:,}" if value is not None else "—",
                delta=delta,
                delta_color="off",
                delta_arrow="auto" if diff else "off",
                border=True,
                width="stretch",
            )

errors = c.errors
if errors:
    failed = ", ".join(stats.FACETS[n]["title"] if n in stats.FACETS else n for n in sorted(errors))
    st.warning(
        f"Some numbers could not be computed in time ({failed}); the rest of the page is complete.", icon="⏱️"
    )
    st.button("Try those again", key="compare_retry")

measure = (
    st.segmented_control(
        "Bars show",
        list(charts.MEASURES),
        key="compare_measure",
        format_func=lambda m: {"count": "Trials", "share": "Share (%)"}[m],
        help="Shares put landscapes of different sizes on one scale: each bar is a share "
        "of its own side's matching trials (closed trials for 'How closed trials ended',"
        " that year's finished trials for results reported).",
    )
    or "count"
)
ui_state.set_view_param("bars", measure, "count")
image_format = ui_state.image_format(st, "compare_image_format")
caption = f"Trial Landscape · A: {' · '.join(fa.describe())} | B: {' · '.join(fb.describe())}"

sections = ["funnel", *(spec.facet for spec in charts.CHARTS)]
for start in range(0, len(sections), 2):
    for col, section in zip(st.columns(2), sections[start : start + 2], strict=False):
        with col.container(border=True):
            title = (
                charts.CHART_BY_FACET[section].title
                if section in charts.CHART_BY_FACET
                else "How the filters narrow the trials"
            )
            if section in errors:
                st.markdown(f"**{title}**")
                st.warning(
                    f"{errors[section]} — this chart could not be computed; the others are complete.",
                    icon="⏱️",
                )
                continue
            rows = c.section(section)
            st.plotly_chart(
                charts.shared_compare_figure(title, section, rows, measure, names, caption),
                key=f"compare_{section}",
                config=chartimage.image_config(f"trial-landscape-compare-{section}", image_format),
            )
            notes = []
            if section in stats.FACETS and compare.is_top_list(section):
                notes.append(
                    "Each side's top list: a bar missing on one side means the value is outside that "
                    "side's top list (not counted there), not zero."
                )
            if section == "why_stopped":
                notes.append(
                    "No shares: a reason may be given at any status, so there is no total to divide by."
                )
            if notes:
                st.caption(" ".join(notes))

st.subheader("The comparison table")
table = compare.comparison_frame(c)
st.caption(
    "One row per value: A's and B's trials and shares (in %, of what the last column says), and B − A in "
    "trials and in percentage points. — = unknown (outside that side's top list) or no share. The downloads "
    "also name A and B in their first two rows."
)
st.dataframe(compare.display_frame(table), hide_index=True, height=420)
for col, fmt in zip(st.columns(4)[:2], export.FORMATS, strict=True):
    col.download_button(
        f"Comparison {fmt.upper()}",
        key=f"compare_{fmt}",
        data=export.to_bytes(table, fmt),
        file_name=export.file_name(
            export.view_stem("comparison", f"{fa.query_string()}|{fb.query_string()}"), fmt
        ),
        mime=export.FORMATS[fmt],
        icon="⬇️",
        width="stretch",
        on_click="ignore",
    )

ui_state.footer()
