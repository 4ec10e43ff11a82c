"""Issue 38 under AppTest: the status control and the status list, Compare's year entry that never swaps a
half-typed range (its notice stays until dismissed), the new filters' URL round trip and clicks, export names,
the footer."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from services.dashboard import engine, export, stats
from services.dashboard.filters import Filters
from services.data import runtime
from services.data.normalize import OPEN_STATUSES
from services.ui import morefilters

PROJECT = Path(__file__).resolve().parent.parent


def _page(path: str, params: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(str(PROJECT / path), default_timeout=180)
    for key, value in (params or {}).items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def test_status_control_and_list_each_change_the_status(db):
    at = _page("app_pages/explore.py")
    assert at.sidebar.radio(key="flt_status_mode").value == "OPEN"
    at.sidebar.radio(key="flt_status_mode").set_value("ANY").run()
    assert at.session_state["filters"].status == () and at.query_params.get("status") == "ANY"
    at.sidebar.radio(key="flt_status_mode").set_value("OPEN").run()
    assert at.session_state["filters"].status == OPEN_STATUSES and "status" not in at.query_params
    # Editing the list while the control still reads "Open": the list wins, the control shows no mode.
    at.sidebar.multiselect(key="flt_status").set_value(["RECRUITING"]).run()
    assert at.session_state["filters"].status == ("RECRUITING",)
    assert at.sidebar.radio(key="flt_status_mode").value is None
    assert not at.exception, at.exception


def test_compare_year_entry_never_swaps_a_half_typed_range(db):
    at = _page("app_pages/compare.py")
    at.number_input(key="cmpb_start_from").set_value(2019).run()
    at.number_input(key="cmpb_start_to").set_value(2019).run()
    assert at.session_state["compare_b"].start_from == 2019 == at.session_state["compare_b"].start_to
    at.number_input(key="cmpb_start_from").set_value(
        2020
    ).run()  # "from" typed first: 2020 > the old "to" 2019
    b = at.session_state["compare_b"]
    assert (b.start_from, b.start_to) == (2020, None)  # not swapped into 2019–2020
    notice = " ".join(w.value for w in at.warning)
    assert "Start year: 2020 is after the “to” value 2019" in notice and "not swapped" in notice
    at.number_input(key="cmpb_start_to").set_value(2024).run()
    b = at.session_state["compare_b"]
    assert (b.start_from, b.start_to) == (2020, 2024)
    assert "not swapped" in " ".join(w.value for w in at.warning)  # still there after the next edit
    at.button(key="dismiss_cmpb_range").click().run()
    assert "not swapped" not in " ".join(w.value for w in at.warning)
    assert not at.exception, at.exception


def test_new_filters_round_trip_describe_and_click(db):
    query = {
        "posted_from": "2018",
        "posted_to": "2020",
        "updated_from": "2024",
        "completion_to": "2030",
        "age_group": ["child", "Older adult"],
        "intervention_type": ["device", "DRUG"],
        "facility": "mayo",
        "include": ["completion", "start"],
        "status": "ANY",
    }
    f, notices = Filters.from_query(query)
    assert notices == []
    assert f.age_group == ("CHILD", "OLDER_ADULT") and f.intervention_type == ("DEVICE", "DRUG")
    assert Filters.from_query(f.to_query())[0] == f
    lines = f.describe()
    assert "First posted: 2018–2020" in lines and "Age group: Child (0–17), Older adult (65+)" in lines
    assert "Including trials without a primary completion date" in lines  # start: no start-year filter is set
    assert Filters.from_query({"age_group": "teen"})[1][0].startswith("Ignored age_group: unknown age group")
    assert Filters.from_query({"posted_from": "2021", "posted_to": "2019"})[0].posted_from == 2019
    clicked = stats.filter_for_click(Filters(), "age_groups", "ADULT")
    assert clicked.age_group == ("ADULT",)
    assert stats.filter_for_click(clicked, "intervention_types", "DEVICE").intervention_type == ("DEVICE",)


def test_age_group_and_left_out_counts_on_the_sample(db):
    """Age groups as ClinicalTrials.gov defines them, counted with SQL from the registry's age texts; the
    include option lets in exactly the trials without a start date."""
    every = Filters(status=())
    child = stats.dashboard(Filters(status=(), age_group=("CHILD",)), db=db).kpis["matching_trials"]
    facet = {r["value"]: r["count"] for r in stats.dashboard(every, db=db).facets["age_groups"]}
    assert child == facet["CHILD"] > 0
    f = Filters(condition="Alzheimer's", start_from=2015, status=())
    (left,) = stats.left_out(f, db=db)
    undated = int(
        db.fetch_value(
            "SELECT count(*) FROM ctgov.studies s WHERE s.start_date IS NULL AND s.nct_id = ANY(:ids)",
            {"ids": engine.SqlEngine(db).matching_ids(Filters(condition="Alzheimer's", status=()))},
        )
    )
    assert left.count == undated > 0
    assert stats.left_out(Filters(), db=db) == []


def test_export_names_differ_per_page_and_view():
    a = export.view_stem("explore-trials", "condition=asthma", "asthma")
    b = export.view_stem("explore-trials", "condition=asthma&phase=PHASE2", "asthma")
    c = export.view_stem("trials-table", "condition=asthma", "asthma")
    assert len({a, b, c}) == 3 and a.startswith("explore-trials-asthma-")
    assert export.view_stem("explore-trials", "") == "explore-trials"


def test_footer_label_has_no_server_path():
    label = runtime.public_label("socket /srv/app/.data/run/postgres")
    assert label == "local socket/postgres" and "/srv" not in label
    assert runtime.public_label("db.example.org:5432/aact") == "db.example.org:5432/aact"
    assert morefilters.status_mode(Filters(status=())) == "ANY"


def test_benchmarks_say_what_counts_as_actual():
    from services.dashboard import planning

    assert "whose enrollment or date type is not given at all counts as actual" in planning.METHOD


def test_compare_equal_values_read_plus_zero_without_an_arrow(db):
    at = _page("app_pages/compare.py")  # A and B are both the default filters: every difference is 0
    b_metrics = [m for m in at.metric if m.label.startswith("B · ")]
    assert b_metrics and all(m.proto.delta == "+0 vs A" for m in b_metrics)
    from streamlit.proto.Metric_pb2 import Metric

    assert all(m.proto.direction == Metric.MetricDirection.NONE for m in b_metrics)  # no ↑ beside "+0"


def test_trials_page_says_what_the_start_year_leaves_out_as_explore_does(db):
    """The Trials page shows Explore's "left out" note (morefilters.left_out_notes) and its include option
    changes the table's total by that many trials."""
    params = {"condition": "Alzheimer's", "start_from": "2015", "status": "ANY"}
    f = Filters.from_query(params)[0]
    (left,) = stats.left_out(f, db=db)
    note = f"The start year filter leaves out {left.count:,} trials without a start date"
    for path, page in (("app_pages/explore.py", "explore"), ("app_pages/trials.py", "trials")):
        at = _page(path, params)
        assert any(note in c.value for c in at.caption), path
        assert at.checkbox(key=f"{page}_include_start").label == (
            f"Include trials without a start date ({left.count:,})"
        )
    shown = stats.dashboard(f, db=db).kpis["matching_trials"]
    assert any(c.value.startswith(f"**{shown:,} matching trials**") for c in at.caption)
    at.checkbox(key="trials_include_start").check().run()
    assert not at.exception, at.exception
    assert at.session_state["filters"].include_missing == ("start",)
    assert any(c.value.startswith(f"**{shown + left.count:,} matching trials**") for c in at.caption)
    assert any(f"Including {left.count:,} trials without a start date" in c.value for c in at.caption)
