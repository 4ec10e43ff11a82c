"""Posted results on the trial page: participant flow, baseline characteristics, primary outcomes and analyses."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from services import results

PAGE = str(Path(__file__).resolve().parent.parent / "app_pages" / "trials.py")


def _richest(db) -> str:  # noqa: ANN001
    """The sample trial with the most primary-outcome analyses (computed, never hard-coded)."""
    return db.fetch_value("SELECT oa.nct_id FROM ctgov.outcome_analyses oa JOIN ctgov.outcomes o ON o.id = oa.outcome_id "
                          "WHERE o.outcome_type = 'PRIMARY' GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1")


def test_results_tables_match_the_results_rows(db):
    nct = _richest(db)
    r = results.trial_results(nct, db)
    groups = db.fetch_value("SELECT count(DISTINCT result_group_id) FROM ctgov.milestones WHERE nct_id = :n", {"n": nct})
    assert r.flow.shape[1] == 2 + groups
    started = db.fetch_rows("SELECT rg.title, m.count FROM ctgov.milestones m JOIN ctgov.result_groups rg "
                            "ON rg.id = m.result_group_id WHERE m.nct_id = :n AND m.title = 'STARTED' "
                            "AND m.period = (SELECT period FROM ctgov.milestones WHERE nct_id = :n ORDER BY id LIMIT 1)",
                            {"n": nct})
    row = r.flow[r.flow["Milestone"] == "STARTED"].iloc[0]
    for s in started:
        assert row[s["title"]] == str(s["count"])
    primary = db.fetch_value("SELECT count(*) FROM ctgov.outcomes WHERE nct_id = :n AND outcome_type = 'PRIMARY'",
                             {"n": nct})
    assert len(r.primary) == primary
    analyses = db.fetch_value("SELECT count(*) FROM ctgov.outcome_analyses oa JOIN ctgov.outcomes o "
                              "ON o.id = oa.outcome_id WHERE oa.nct_id = :n AND o.outcome_type = 'PRIMARY'", {"n": nct})
    assert sum(len(p.analyses) for p in r.primary) == analyses
    measures = db.fetch_value("SELECT count(DISTINCT title) FROM ctgov.baseline_measurements WHERE nct_id = :n",
                              {"n": nct})
    assert r.baseline["Characteristic"].nunique() == measures


def test_results_none_for_a_trial_without_results(db):
    nct = db.fetch_value("SELECT s.nct_id FROM ctgov.studies s WHERE NOT EXISTS (SELECT 1 FROM ctgov.outcomes o "
                         "WHERE o.nct_id = s.nct_id) AND NOT EXISTS (SELECT 1 FROM ctgov.milestones m "
                         "WHERE m.nct_id = s.nct_id) ORDER BY 1 LIMIT 1")
    assert not results.trial_results(nct, db).any


def test_trial_page_shows_the_results_tab(db):
    nct = _richest(db)
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params["nct"] = nct
    at.run()
    assert not at.exception, at.exception
    assert [t.label for t in at.tabs][-1] == "Results"
    heads = [s.value for s in at.subheader]
    assert "Participant flow" in heads and "Baseline characteristics" in heads
    assert any(h.startswith("Primary outcomes (") for h in heads)
    assert any("Statistical analyses" in m.value for m in at.markdown)


def test_report_side_effects_use_reported_event_totals(db):
    from services import report
    from services.assistant.backend import DatabaseBackend

    nct = db.fetch_value("SELECT nct_id FROM ctgov.reported_event_totals WHERE event_type = 'serious' "
                         "AND subjects_at_risk > 0 GROUP BY 1 ORDER BY sum(subjects_affected) DESC, 1 LIMIT 1")
    events = DatabaseBackend(db).get_adverse_events(nct)
    assert events is not None and events["has_results"]
    want = db.fetch_rows("SELECT event_type, sum(subjects_affected)::int AS a, sum(subjects_at_risk)::int AS r "
                         "FROM ctgov.reported_event_totals WHERE nct_id = :n AND subjects_affected IS NOT NULL "
                         "GROUP BY 1", {"n": nct})
    assert {t["event_type"]: (t["subjects_affected"], t["subjects_at_risk"]) for t in events["totals"]} == {
        w["event_type"]: (w["a"], w["r"]) for w in want}
    effects = report.side_effects(events)
    serious = next(w for w in want if w["event_type"] == "serious")
    assert f"{serious['a']:,} of {serious['r']:,} people" in effects["totals"][0]
    assert effects["totals"][0].endswith("had at least one serious side effect")


def test_results_a_range_with_one_limit_posted_names_that_limit(db):
    # Some sample trials post only one limit of a measurement's range or of an analysis's confidence interval; the
    # tables read "12 (3 to )" and "95% 3 to ", as if the other limit had been cut off.
    ncts = [r["nct_id"] for r in db.fetch_rows(
        "SELECT DISTINCT o.nct_id FROM ctgov.outcomes o JOIN ctgov.outcome_measurements om ON om.outcome_id = o.id "
        "WHERE o.outcome_type = 'PRIMARY' AND (om.dispersion_lower_limit_raw IS NULL) <> "
        "(om.dispersion_upper_limit_raw IS NULL) UNION SELECT DISTINCT o.nct_id FROM ctgov.outcomes o "
        "JOIN ctgov.outcome_analyses oa ON oa.outcome_id = o.id WHERE o.outcome_type = 'PRIMARY' "
        "AND (oa.ci_lower_limit IS NULL) <> (oa.ci_upper_limit IS NULL) ORDER BY 1")]
    assert ncts
    cells = []
    for nct in ncts:
        for outcome in results.trial_results(nct, db=db).primary:
            cells += [str(v) for v in outcome.table.iloc[:, 1:].to_numpy().ravel()]
            cells += [str(v) for v in outcome.analyses["Confidence interval"]]
    one_sided = [c for c in cells if "lower limit" in c or "upper limit" in c]
    assert one_sided and not [c for c in cells if c.endswith((" to )", " to ")) or "( to " in c or "% to " in c]


class _PostedResults:
    """A database that answers the four results queries with the given rows (columns as in sql/queries)."""

    def __init__(self, **rows: list[dict]) -> None:
        import pandas as pd

        columns = {
            "results_flow": ["period", "milestone", "grp", "count"],
            "results_baseline": ["measure", "units", "param_type", "dispersion_type", "classification", "category",
                                 "grp", "param_value", "dispersion_value", "dispersion_lower_limit",
                                 "dispersion_upper_limit"],
            "results_primary_outcomes": ["outcome_id", "title", "time_frame", "units", "param_type",
                                         "dispersion_type", "classification", "category", "grp", "param_value",
                                         "dispersion_value", "lower_limit", "upper_limit"],
            "results_primary_analyses": ["outcome_id", "groups", "method", "param_type", "param_value", "ci_percent",
                                         "ci_lower_limit", "ci_upper_limit", "p_value_raw"],
        }
        self.frames = {name: pd.DataFrame(rows.get(name, []), columns=cols) for name, cols in columns.items()}

    def fetch_many(self, queries, **_):  # noqa: ANN001, ANN201
        return {name: self.frames[name] for name in queries}


_OUTCOME = {"outcome_id": 1, "title": "Pain score", "time_frame": "12 weeks", "units": "points",
            "param_type": "MEAN", "dispersion_type": "Standard Deviation", "classification": None, "category": None,
            "grp": "Drug", "param_value": "4.2", "dispersion_value": "1.1", "lower_limit": None, "upper_limit": None}


def test_results_a_confidence_interval_without_its_level_does_not_start_with_a_bare_percent_sign():
    # An analysis that posts its interval's limits but not its level (ci_percent NULL) read "% 3 to 5".
    db = _PostedResults(results_primary_outcomes=[_OUTCOME], results_primary_analyses=[
        {"outcome_id": 1, "groups": "Drug vs Placebo", "method": "ANCOVA", "param_type": "Mean Difference",
         "param_value": -1.5, "ci_percent": None, "ci_lower_limit": -2.5, "ci_upper_limit": -0.5, "p_value_raw": "0.01"},
        {"outcome_id": 1, "groups": "Drug vs Placebo", "method": "ANCOVA", "param_type": "Mean Difference",
         "param_value": -1.5, "ci_percent": 95, "ci_lower_limit": -2.5, "ci_upper_limit": None, "p_value_raw": "0.01"},
    ])
    [outcome] = results.trial_results("NCT00000001", db=db).primary  # type: ignore[arg-type]
    assert list(outcome.analyses["Confidence interval"]) == ["-2.5 to -0.5", "95% lower limit -2.5"]


def test_results_baseline_names_what_the_number_in_brackets_is():
    # The baseline table said "Mean, Years" beside "61 (9.5)" and "Median, Years" beside "60 (41 to 79)": nothing
    # told a standard deviation from a full range or an inter-quartile range (the outcomes' heading names it).
    row = {"measure": "Age", "units": "Years", "classification": None, "category": None, "grp": "Drug",
           "dispersion_lower_limit": None, "dispersion_upper_limit": None}
    db = _PostedResults(results_baseline=[
        dict(row, param_type="MEAN", dispersion_type="STANDARD_DEVIATION", param_value="61", dispersion_value="9.5"),
        dict(row, measure="Age, median", param_type="MEDIAN", dispersion_type="FULL_RANGE", param_value="60",
             dispersion_value=None, dispersion_lower_limit="41", dispersion_upper_limit="79"),
        dict(row, measure="Sex", units="Participants", param_type="COUNT_OF_PARTICIPANTS", dispersion_type=None,
             category="Female", param_value="30", dispersion_value=None),
    ])
    baseline = results.trial_results("NCT00000001", db=db).baseline  # type: ignore[arg-type]
    assert baseline[["Measure", "Drug"]].values.tolist() == [
        ["Mean (Standard deviation), Years", "61 (9.5)"], ["Median (Full range), Years", "60 (41 to 79)"],
        ["Count of participants, Participants", "30"]]


def test_results_an_interval_shows_its_limits_even_when_a_spread_is_posted_too():
    # Some trials post both a dispersion value and the limits of a 95% confidence interval or full range; the cell
    # showed "2.21 (0.11)" under the heading "Mean (95% Confidence Interval)", as if 0.11 were the interval.
    db = _PostedResults(results_primary_outcomes=[
        dict(_OUTCOME, dispersion_type="95% Confidence Interval", param_value="2.21", dispersion_value="0.11",
             lower_limit="2.00", upper_limit="2.42"),
        dict(_OUTCOME, outcome_id=2, dispersion_type="Standard Deviation", param_value="0.50",
             dispersion_value="0.78", lower_limit="0.41", upper_limit="0.57"),
        dict(_OUTCOME, outcome_id=3, param_type="MEDIAN", dispersion_type="Full Range", param_value="5",
             dispersion_value="48", lower_limit="1", upper_limit="49"),
    ])
    cells = [o.table.iloc[0, 1] for o in results.trial_results("NCT00000001", db=db).primary]  # type: ignore[arg-type]
    assert cells == ["2.21 (2.00 to 2.42)", "0.50 (0.78)", "5 (1 to 49)"]
