"""Chart builders: facet rows in, plotly figures out — values, labels, colours, empty states and clicks."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest

from services import inert
from services.dashboard import charts, stats
from services.dashboard.compare import Row

STATUS_ROWS = [
    {"value": "RECRUITING", "label": "Recruiting", "count": 30},
    {"value": "ACTIVE_NOT_RECRUITING", "label": "Active, not recruiting", "count": 12},
    {"value": None, "label": "Not given", "count": 2},
]
OUTCOME_ROWS = [
    {"value": "COMPLETED", "label": "Completed", "count": 50},
    {"value": "TERMINATED", "label": "Terminated", "count": 9},
]


def test_charts_cover_every_facet_once():
    assert sorted(c.facet for c in charts.CHARTS) == sorted(stats.FACETS)
    assert len(charts.CHARTS) >= 19
    assert {c.facet for c in charts.CHARTS if c.clickable} == {n for n, s in stats.FACETS.items() if s.get("filter")}


def test_charts_hbar_keeps_values_labels_and_order():
    fig = charts.facet_figure("status", STATUS_ROWS)
    bar = fig.data[0]
    assert isinstance(bar, go.Bar) and bar.orientation == "h"
    assert list(bar.y) == ["Recruiting", "Active, not recruiting", "Not given"]
    assert list(bar.x) == [30, 12, 2]
    assert [list(c) for c in bar.customdata] == [["RECRUITING", "Recruiting"],
                                                 ["ACTIVE_NOT_RECRUITING", "Active, not recruiting"],
                                                 [None, "Not given"]]
    assert fig.layout.yaxis.autorange == "reversed"  # largest first, at the top
    assert fig.layout.title.text == "Recruitment status"


def test_charts_hbar_leaves_room_for_the_longest_bars_count():
    # The count is drawn past the end of the longest bar: at 575,000 studies "66,573" was cut to "66,57" by the
    # figure's edge. Seven characters of the 12 px label font need about 50 px.
    fig = charts.facet_figure("status", [{**STATUS_ROWS[0], "count": 123_600}, *STATUS_ROWS[1:]])
    assert fig.data[0].textposition == "outside" and fig.data[0].cliponaxis is False
    assert fig.layout.margin.r >= 7 * len(fig.data[0].text[0])


def test_charts_colour_is_stable_per_category_across_charts():
    status = charts.facet_figure("status", STATUS_ROWS + [{"value": "TERMINATED", "label": "Terminated", "count": 1}])
    outcome = charts.facet_figure("outcome", OUTCOME_ROWS)
    s_colors = dict(zip((c[0] for c in status.data[0].customdata), status.data[0].marker.color, strict=True))
    o_colors = dict(zip((c[0] for c in outcome.data[0].customdata), outcome.data[0].marker.color, strict=True))
    assert s_colors["TERMINATED"] == o_colors["TERMINATED"] == charts.COLORS["status"]["TERMINATED"]
    assert s_colors[None] == charts.NOT_GIVEN
    assert s_colors["RECRUITING"] != s_colors["ACTIVE_NOT_RECRUITING"]
    # Every palette gives distinct colours to distinct real categories.
    for kind, palette in charts.COLORS.items():
        real = [c for v, c in palette.items() if c != charts.NOT_GIVEN]
        assert len(real) == len(set(real)), kind


def test_charts_phase_bars_in_facet_order_with_no_data_grey():
    rows = [{"value": "PHASE1", "label": "Phase 1", "count": 5}, {"value": "PHASE2", "label": "Phase 2", "count": 7},
            {"value": "NONE", "label": "No phase (observational)", "count": 3}]
    fig = charts.facet_figure("phase", rows)
    bar = fig.data[0]
    assert list(bar.y) == ["Phase 1", "Phase 2", "No phase (observational)"]  # phase order, not count order
    assert list(bar.x) == [5, 7, 3]
    assert list(bar.marker.color) == [charts.COLORS["phase"]["PHASE1"], charts.COLORS["phase"]["PHASE2"],
                                      charts.NOT_GIVEN]
    assert list(bar.text) == ["5", "7", "3"]


def test_charts_vertical_buckets_wrap_labels_and_grey_missing():
    rows = [{"value": -1, "label": "Dates not given", "count": 4}, {"value": 0, "label": "< 1 year", "count": 6},
            {"value": 1, "label": "1–2 years", "count": 2}]
    fig = charts.facet_figure("duration", rows)
    bar = fig.data[0]
    assert list(bar.x) == ["Dates not<br>given", "&lt; 1 year", "1–2 years"]  # record text never forms Plotly HTML
    assert list(bar.y) == [4, 6, 2]
    assert list(bar.marker.color) == [charts.NOT_GIVEN, charts.ACCENT, charts.ACCENT]
    assert fig.layout.xaxis.tickangle is None  # plotly tilts labels itself only when they do not fit


def test_charts_empty_facet_explains_itself():
    fig = charts.facet_figure("us_states", [])
    assert fig.data == ()
    assert [a.text for a in fig.layout.annotations] == ["No matching trial has a site in the United States."]
    assert fig.layout.title.text == "US states"
    for spec in charts.CHARTS:
        empty = charts.facet_figure(spec.facet, None)
        assert empty.layout.annotations[0].text == spec.empty and spec.empty


def test_charts_enrollment_groups_actual_and_anticipated():
    rows = [{"value": 0, "label": "Not given", "series": "Type not given", "count": 4},
            {"value": 1, "label": "1–49", "series": "Actual", "count": 3},
            {"value": 1, "label": "1–49", "series": "Anticipated", "count": 2},
            {"value": 3, "label": "100–249", "series": "Actual", "count": 6}]
    fig = charts.facet_figure("enrollment", rows)
    assert fig.layout.barmode == "group"
    by_name = {t.name: (list(t.x), list(t.y)) for t in fig.data}
    assert by_name == {"Actual": (["Not given", "1–49", "100–249"], [0, 3, 6]),
                       "Anticipated": (["Not given", "1–49", "100–249"], [0, 2, 0]),
                       "Type not given": (["Not given", "1–49", "100–249"], [4, 0, 0])}
    assert fig.data[0].marker.color == charts.COLORS["series"]["Actual"]
    assert (fig.layout.legend.yref, fig.layout.legend.y) == ("container", 0)  # at the foot, clear of the title


def test_charts_results_rate_has_bars_and_percent_line():
    rows = [{"value": 2019, "label": "2019", "count": 10, "with_results": 4, "rate": 0.4},
            {"value": 2020, "label": "2020", "count": 5, "with_results": 0, "rate": 0.0}]
    fig = charts.facet_figure("results_by_year", rows)
    bars, line = fig.data
    assert list(bars.x) == [2019, 2020] and list(bars.y) == [10, 5]
    assert list(line.y) == [40.0, 0.0] and line.yaxis == "y2"
    assert list(fig.layout.yaxis2.ticktext) == ["0%", "25%", "50%", "75%", "100%"]


def test_charts_long_labels_are_shortened_but_kept_for_hover():
    long_name = "A very long sponsor name that goes on and on, Incorporated International"
    rows = [{"value": long_name, "label": long_name, "count": 9}]
    fig = charts.facet_figure("lead_sponsors", rows)
    tick = fig.data[0].y[0]
    assert len(tick) <= charts.LABEL_CHARS and tick.endswith("…")
    assert fig.data[0].customdata[0][1] == long_name


def test_charts_two_line_collaboration_and_sentence_case_reasons():
    fig = charts.facet_figure("collaboration", [{"value": "Mayo Clinic", "collaborator": "NCI",
                                                  "label": "Mayo Clinic → NCI", "count": 3}])
    assert fig.data[0].y[0] == "Mayo Clinic<br>→ NCI"
    assert fig.data[0].customdata[0][0] == "Mayo Clinic"
    fig = charts.facet_figure("why_stopped", [{"value": "low accrual", "label": "low accrual", "count": 2}])
    assert fig.data[0].y[0] == "Low accrual"
    assert fig.data[0].customdata[0][0] == "low accrual"


def test_charts_duplicate_short_labels_stay_separate_bars():
    a = "x" * 60 + "A"
    b = "x" * 60 + "B"
    fig = charts.facet_figure("conditions", [{"value": a, "label": a, "count": 2}, {"value": b, "label": b, "count": 1}])
    assert len(set(fig.data[0].y)) == 2


def test_charts_us_states_show_top_rows_only():
    rows = [{"value": f"S{i}", "label": f"State {i}", "count": 100 - i} for i in range(40)]
    fig = charts.facet_figure("us_states", rows)
    assert len(fig.data[0].y) == charts.CHART_BY_FACET["us_states"].max_rows == 25


def test_charts_funnel_shows_counts_shares_and_unset_stages():
    funnel = [{"stage": "All trials (other filters)", "key": "base", "count": 200, "active": True},
              {"stage": "Condition", "key": "condition", "count": 50, "active": True},
              {"stage": "Status", "key": "status", "count": 50, "active": False}]
    fig = charts.funnel_figure(funnel)
    trace = fig.data[0]
    assert isinstance(trace, go.Funnel)
    assert list(trace.y) == ["All trials (other filters)", "Condition", "Status (not set)"]
    assert list(trace.x) == [200, 50, 50]
    assert list(trace.text) == ["200 (100%)", "50 (25%)", "50 (25%)"]
    assert trace.marker.color[2] != trace.marker.color[1]


@pytest.mark.parametrize(("selection", "want"), [
    (None, []),
    ({"points": []}, []),
    ({"points": [{"curve_number": 0, "point_index": 1}]}, ["ACTIVE_NOT_RECRUITING"]),
    ({"points": [{"curve_number": 0, "point_number": 0}, {"curve_number": 0, "point_index": 0}]}, ["RECRUITING"]),
    ({"points": [{"curve_number": 0, "point_index": 2}]}, []),  # "Not given" adds no filter
    ({"points": [{"curve_number": 5, "point_index": 0, "customdata": ["RECRUITING", "x"]}]}, ["RECRUITING"]),
])
def test_charts_clicked_values(selection, want):
    fig = charts.facet_figure("status", STATUS_ROWS)
    assert charts.clicked_values(fig, selection) == want


def test_charts_click_on_grouped_enrollment_gives_the_bucket():
    rows = [{"value": 1, "label": "1–49", "series": "Actual", "count": 3},
            {"value": 5, "label": "500–999", "series": "Anticipated", "count": 2}]
    fig = charts.facet_figure("enrollment", rows)
    assert charts.clicked_values(fig, {"points": [{"curve_number": 1, "point_index": 1}]}) == [5]
    value = charts.clicked_values(fig, {"points": [{"curve_number": 0, "point_index": 0}]})[0]
    assert type(value) is int


def test_charts_wrap_and_short_label():
    assert charts.wrap_label("No phase (observational)") == "No phase<br>(observational)"
    assert charts.wrap_label("Phase 1") == "Phase 1"
    assert charts.wrap_label("one two three four five six seven eight", width=8) == "one two<br>three f…"
    assert charts.short_label("abc", 5) == "abc"
    assert charts.short_label("abcdefgh", 5) == "abcd…"


def test_charts_whole_dashboard_renders(db):
    from services.dashboard.filters import Filters

    d = stats.dashboard(Filters(status=()), db=db)
    for spec in charts.CHARTS:
        fig = charts.facet_figure(spec.facet, d.facets[spec.facet])
        assert fig.data, spec.facet  # the whole sample has data for every chart
        fig.to_json()  # serialisable, as Streamlit needs
        # Every chart keeps the common frame next to its own layout: its title at the left, fixed axes, clicks select.
        layout = fig.layout
        assert (layout.title.text, layout.title.x, layout.clickmode, layout.dragmode) == (
            spec.title, 0, "event+select", False), spec.facet
        assert layout.xaxis.fixedrange and layout.yaxis.fixedrange and layout.margin.l >= 8, spec.facet
        # Margins start wide enough for the labels (label_px), and automargin still widens them where they are not.
        assert layout.xaxis.automargin and layout.yaxis.automargin, spec.facet
        assert layout.showlegend is (spec.style in ("enrollment", "rate")), spec.facet
        if spec.style == "rate":
            assert layout.yaxis2.fixedrange and layout.yaxis2.overlaying == "y" and layout.margin.b == 68
        if spec.style == "hbar":
            assert layout.yaxis.autorange == "reversed" and layout.xaxis.showticklabels is False


def test_charts_label_width_grows_with_the_text_and_takes_the_longest_line():
    assert charts.label_px("", 12) == 0
    assert charts.label_px("Phase 1", 12) < charts.label_px("Phase 1/Phase 2", 12)
    assert charts.label_px("MMMM", 12) > charts.label_px("iiii", 12)  # wide and narrow letters
    assert charts.label_px("Memorial<br>→ Pfizer", 12) == charts.label_px("Memorial", 12)
    assert charts.label_px("a &amp; b", 12) == charts.label_px("a & b", 12)  # an entity is one character
    assert abs(charts.label_px("Recruiting", 24) - 2 * charts.label_px("Recruiting", 12)) <= 1  # rounded up
    fig = charts.facet_figure("status", STATUS_ROWS)
    longest = max(charts.label_px(t, charts.HBAR_TICK_PX) for t in fig.data[0].y)
    assert fig.layout.margin.l == longest + charts.TICK_PAD_PX


def test_charts_shared_figure_sends_what_the_plain_figure_sends_and_copies_its_dict_once():
    import plotly.io
    import plotly.tools

    rows = [*STATUS_ROWS, {"value": "COMPLETED", "label": "Completed <b>x</b>", "count": 7}]
    shared = charts.shared_facet_figure("status", rows)
    plain = charts.facet_figure("status", rows)
    assert isinstance(shared, charts.SharedFigure) and type(plain) is go.Figure
    assert charts.shared_facet_figure("status", [dict(r) for r in rows]) is shared  # same rows, same object
    # What st.plotly_chart does with a figure: to_dict via plotly.tools, then plotly.io.to_json.
    sent = plotly.io.to_json(plotly.tools.return_figure_from_figure_or_data(shared, validate_figure=True),
                             validate=False)
    assert sent == plotly.io.to_json(plain.to_dict(), validate=False)
    assert shared.to_dict() is shared.to_dict()  # made once, not deep-copied on every render
    assert charts.clicked_values(shared, {"points": [{"curve_number": 0, "point_index": 3}]}) == ["COMPLETED"]
    funnel = [{"stage": "All trials", "count": 9, "active": True}, {"stage": "Condition", "count": 3}]
    assert charts.shared_funnel_figure(funnel).to_dict() == charts.funnel_figure(funnel).to_dict()


def test_charts_shortened_labels_never_cut_an_entity_in_half():
    # A label is cut to LABEL_CHARS characters as shown, then escaped: its "&" comes out whole ("&amp;"), never "&am…".
    name = "x" * 28 + " & Partners Research Foundation"
    shown = inert.plotly_text(charts.short_label(name))
    assert shown == "x" * 28 + " &amp;…"
    fig = charts.facet_figure("lead_sponsors", [{"value": name, "label": name, "count": 3}])
    assert fig.data[0].y[0] == shown and fig.data[0].customdata[0][1] == inert.plotly_text(name)
    fig = charts.facet_figure("collaboration", [{"value": name, "collaborator": "NCI", "label": f"{name} → NCI",
                                                  "count": 3}])
    assert fig.data[0].y[0] == inert.plotly_text(charts.short_label(name, charts.LABEL_CHARS - 2)) + "<br>→ NCI"
    row = Row("lead_sponsors", "Top lead sponsors", name, name, 3, 1, None, None, "")
    assert charts.compare_figure("Sponsors", "hbar", [row]).data[0].y[0] == shown
