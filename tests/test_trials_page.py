"""Tests for the Trials page (pages/trials.py), its shaping (services/dashboard/trialview.py) and exports
(services/dashboard/export.py)."""

from __future__ import annotations

import datetime as dt
import io
import json
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from services import inert
from services.dashboard import export, search, trialview
from services.dashboard.filters import Filters

PROJECT = Path(__file__).resolve().parent.parent
PAGE = str(PROJECT / "app_pages/trials.py")
KOWA = "NCT05923281"


def _page(**params: str) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def _texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [h.value for h in at.header]
    parts += [s.value for s in at.subheader]
    return "\n".join(parts)


# ---- pure shaping -----------------------------------------------------------------------------------
def test_trialview_table_uses_labels_links_and_the_filter_unit():
    rows = pd.DataFrame({
        "nct_id": ["NCT00000001", "NCT00000002"], "title": ["A", None], "phase": ["PHASE1/PHASE2", None],
        "status": ["Active, not recruiting", "RECRUITING"], "conditions": ["X; Y", None],
        "lead_sponsor": ["S", None], "enrollment": [12.0, float("nan")],
        "start_date": [dt.date(2020, 1, 31), None], "sites": [3, 0], "nearest_miles": [10.0, None],
    })
    out = trialview.trials_table(rows, "km")
    assert out.astype(object).where(out.notna(), None).to_dict("records") == [
        {"nct_id": "NCT00000001", "link": "https://clinicaltrials.gov/study/NCT00000001", "title": "A",
         "phase": "Phase 1/Phase 2", "status": "Active, not recruiting", "conditions": "X; Y", "lead_sponsor": "S",
         "enrollment": 12, "start_date": dt.date(2020, 1, 31), "sites": 3, "nearest": 16.1},
        {"nct_id": "NCT00000002", "link": "https://clinicaltrials.gov/study/NCT00000002", "title": "",
         "phase": "—", "status": "Recruiting", "conditions": "", "lead_sponsor": "", "enrollment": None,
         "start_date": None, "sites": 0, "nearest": None},
    ]


def test_trialview_age_range_and_markdown_escaping():
    assert trialview.age_range({"minimum_age": "18 Years", "maximum_age": "N/A"}) == "18 Years and older"
    assert trialview.age_range({"minimum_age": None, "maximum_age": "6 Months"}) == "Up to 6 Months"
    assert trialview.age_range({"minimum_age": "N/A", "maximum_age": None}) == "Any age"
    assert trialview.age_range({"minimum_age": "2 Years", "maximum_age": "17 Years"}) == "2 Years to 17 Years"
    assert inert.md("*a* $5 <b>") == r"\*a\* \$5 \<b\>"
    assert trialview.registry_markdown(r"Intolerant\* means \>= 2") == r"Intolerant\* means \>\= 2"
    assert trialview.healthy_text(None) == "Not stated" and trialview.healthy_text(True) == "Yes"


def test_trialview_parse_compare_keeps_order_and_reports_bad_ids():
    ids, bad = trialview.parse_compare(["nct05923281, NCT00000001", "oops", "NCT05923281"])
    assert ids == [KOWA, "NCT00000001"] and bad == ["oops"]
    assert trialview.parse_compare(None) == ([], [])


def test_trialview_parse_compare_reads_a_link_s_first_ids_only():
    # A link may carry thousands of ids: each was checked against the list of those kept (5.6 s for 30,000, on every
    # rerun of the Trials page for ?sel=), and every rejected text went into the error shown.
    many = [f"NCT{i:08d}" for i in range(3 * trialview.MAX_LINK_IDS)]
    assert trialview.parse_compare(",".join(many)) == (many[:trialview.MAX_LINK_IDS], [])
    assert trialview.parse_compare(["oops"] * 1000) == ([], ["oops"] * trialview.MAX_LINK_IDS)
    assert trialview.MAX_LINK_IDS >= max(trialview.PAGE_SIZES)  # a page's ticked rows all come back


def test_export_csv_and_json_round_trip_every_row():
    df = pd.DataFrame({"nct_id": ["NCT1", "NCT2"], "n": [1.5, None], "d": [dt.date(2020, 1, 2), None],
                       "t": ['comma, "quote"', "ü"], "b": [True, False]})
    back = pd.read_csv(io.BytesIO(export.to_csv_bytes(df)), keep_default_na=False, dtype=str)
    assert back.to_dict("list") == {"nct_id": ["NCT1", "NCT2"], "n": ["1.5", ""], "d": ["2020-01-02", ""],
                                    "t": ['comma, "quote"', "ü"], "b": ["True", "False"]}
    assert json.loads(export.to_json_bytes(df)) == [
        {"nct_id": "NCT1", "n": 1.5, "d": "2020-01-02", "t": 'comma, "quote"', "b": True},
        {"nct_id": "NCT2", "n": None, "d": None, "t": "ü", "b": False},
    ]
    assert export.to_bytes(df, "csv") == export.to_csv_bytes(df)
    with pytest.raises(ValueError):
        export.to_bytes(df, "xlsx")
    assert export.file_name("my trials!", "json", dt.date(2026, 1, 2)) == "my-trials-2026-01-02.json"


def test_export_json_writes_a_missing_timestamp_as_null():
    # A datetime column's missing value (NaT) was written as the text "NaT", where CSV leaves the cell empty.
    df = pd.DataFrame({"ts": pd.to_datetime(["2020-01-01 05:06", None]), "o": [pd.NaT, [pd.NaT]]})
    assert json.loads(export.to_json_bytes(df)) == [{"ts": "2020-01-01T05:06:00", "o": None},
                                                    {"ts": None, "o": [None]}]


def test_export_json_is_byte_for_byte_json_dumps_with_indent_one():
    import numpy as np

    frames = [
        pd.DataFrame({"nct_id": ["NCT1", "NCT2"], "n": [1.5, None], "d": [dt.date(2020, 1, 2), None],
                      "t": ['comma, "quote"\nnext', "ü\u2028<b>"], "b": [True, False], "i": [3, -4]}),
        pd.DataFrame({"a%s": [[1, "x", [2, {"k": None}]], []], "%": [float("inf"), float("nan")],
                      "w": [np.int64(7), pd.NA], "s": pd.Series(["a", None], dtype="str"),
                      "ts": pd.to_datetime(["2020-01-01 05:06", None]), "o": [dt.datetime(2020, 1, 1, 5), {"k": 1}]}),
        pd.DataFrame({"m": [float("nan"), "s"], "nb": pd.Series([True, None], dtype="boolean"),
                      "c": pd.Categorical(["x", None]), "none": [None, None], "f": [0.1, 2.0]}),
        pd.DataFrame([[1, 2], [3, 4]], columns=["a", "a"]), pd.DataFrame(index=range(2)), pd.DataFrame({"a": []}),
    ]
    for df in frames:
        records = [{str(k): export._plain(v) for k, v in zip(df.columns, row, strict=True)}
                   for row in df.itertuples(index=False, name=None)]
        assert export.to_json_bytes(df) == json.dumps(records, ensure_ascii=False, indent=1).encode("utf-8")


def test_trialview_export_rows_hold_every_matching_trial(db):
    f = Filters(condition="lung cancer", status=())
    rows = trialview.export_rows(f, "start_date", True)
    assert len(rows) == search.count_trials(f, db=db)
    assert list(rows.columns[:2]) == ["nct_id", "url"]
    assert json.loads(export.to_json_bytes(rows))[0]["nct_id"] == rows["nct_id"].iloc[0]


def test_trialview_comparison_puts_trials_side_by_side(db):
    a = search.trial_detail(KOWA, db=db)
    other = search.matching_trials(Filters(country=("France",)), limit=1, db=db)["nct_id"].iloc[0]
    b = search.trial_detail(other, db=db)
    table = trialview.comparison([a, b])
    assert list(table.columns) == [KOWA, other]
    assert table.loc["Phase", KOWA] == "Phase 3"
    assert table.loc["Lead sponsor", KOWA] == "Kowa Company, Ltd."
    assert table.loc["Sites", KOWA] == "15 in Japan"
    assert table.loc["ClinicalTrials.gov", other] == f"https://clinicaltrials.gov/study/{other}"
    assert table.loc["Eligibility criteria", KOWA] == (
        f"{len(a.criteria.inclusion)} inclusion, {len(a.criteria.exclusion)} exclusion")
    assert "France" in table.loc["Sites", other]


# ---- the page ------------------------------------------------------------------------------------------
def test_trials_page_deep_link_opens_the_kowa_trial(db):
    at = _page(nct=KOWA)
    text = _texts(at)
    assert at.header[0].value.startswith(inert.md_line("A Phase III Confirmatory Study of K-877"))
    assert "**Phase**  \nPhase 3" in text
    assert "**Lead sponsor**  \n" + inert.md("Kowa Company, Ltd.") in text
    assert "**Sites**  \n15 in Japan" in text
    assert "https://clinicaltrials.gov/study/NCT05923281" in text
    d = search.trial_detail(KOWA, db=db)
    assert f"Inclusion criteria ({len(d.criteria.inclusion)})" in text
    assert f"Exclusion criteria ({len(d.criteria.exclusion)})" in text
    assert trialview.criteria_markdown(d.criteria.inclusion) in text
    sites = next(df.value for df in at.dataframe if "facility" in df.value.columns)
    assert len(sites) == 15 and set(sites["country"]) == {"Japan"}
    assert at.query_params["nct"] == KOWA  # the share link keeps the trial


def test_trials_page_detail_shows_distances_when_a_place_is_set(db):
    at = _page(nct=KOWA, near="Osaka, Japan")
    sites = next(df.value for df in at.dataframe if "facility" in df.value.columns)
    assert list(sites["distance"]) == sorted(sites["distance"])
    assert "Distances from Osaka" in _texts(at)


def test_trials_page_malformed_nct_says_so_and_shows_the_table(db):
    at = _page(nct="NCT-12;DROP")
    assert any(inert.md_line("is not a ClinicalTrials.gov id") in e.value for e in at.error)
    assert "nct" not in at.query_params
    assert any("matching trials" in c.value for c in at.caption)


def test_trials_page_unknown_nct_says_it_is_not_in_the_database(db):
    at = _page(nct="NCT00000000")
    assert any("No trial NCT00000000 in the connected database" in w.value for w in at.warning)
    total = search.count_trials(Filters(), db=db)
    assert any(f"**{total:,} matching trials**" in c.value for c in at.caption)


def test_trials_page_table_is_sorted_and_paginated(db):
    f = Filters(condition="diabetes", status=())
    at = _page(condition="diabetes", status="ANY")
    at.selectbox(key="trials_sort").set_value("enrollment").run()
    at.toggle(key="trials_desc").set_value(False).run()
    at.number_input(key="trials_page").set_value(2).run()
    assert not at.exception, at.exception
    expected = search.matching_trials(f, sort="enrollment", descending=False, limit=50, offset=50, db=db)
    shown = at.dataframe[0].value
    assert list(shown["nct_id"]) == list(expected["nct_id"])
    total = search.count_trials(f, db=db)
    assert any(f"**{total:,} matching trials** · showing 51–100" in c.value for c in at.caption)


def test_trials_page_unknown_place_says_so_and_keeps_the_other_filters(db):
    at = _page(near="Qwxzville Nowhere", condition="diabetes", status="ANY")
    assert any("Could not find the place" in w.value for w in at.warning)
    f = at.session_state["filters"]
    assert f.condition == "diabetes" and f.near is None and f.status == ()
    total = search.count_trials(Filters(condition="diabetes", status=()), db=db)
    assert any(f"**{total:,} matching trials**" in c.value for c in at.caption)


def test_trials_page_compare_link_shows_a_side_by_side_table(db):
    other = search.matching_trials(Filters(country=("France",)), limit=1, db=db)["nct_id"].iloc[0]
    at = _page(compare=f"{KOWA},{other},bogus")
    assert any("bogus" in e.value for e in at.error)
    table = at.table[0].value
    assert list(table.columns) == [KOWA, other]
    assert table.loc["Lead sponsor", KOWA] == inert.md_line("Kowa Company, Ltd.")


def test_trials_page_open_by_id_form_goes_to_the_detail(db):
    at = _page()
    at.text_input(key="open_nct").set_value("nct05923281")
    next(b for b in at.button if b.label == "Open by id").click()
    at.run()
    assert not at.exception, at.exception
    assert at.query_params["nct"] == KOWA
    assert at.header[0].value.startswith(inert.md_line("A Phase III Confirmatory Study of K-877"))


def test_trials_page_back_button_returns_to_the_table(db):
    at = _page(nct=KOWA)
    next(b for b in at.button if b.label == "← All matching trials").click()
    at.run()
    assert not at.exception, at.exception
    assert "nct" not in at.query_params
    assert any("matching trials" in c.value for c in at.caption)


def test_trials_page_marks_a_stale_recruiting_status(db):
    today = dt.date.today()
    rows = db.fetch_rows(
        "SELECT s.nct_id, (s.primary_completion_date < CAST(:today AS date) OR coalesce(s.last_update_posted_date, "
        "s.last_update_submitted_date) < CAST(:today AS date) - 730) AS stale, "
        "coalesce(s.last_update_posted_date, s.last_update_submitted_date) AS updated "
        "FROM ctgov.studies s WHERE upper(replace(s.overall_status, ' ', '_')) = 'RECRUITING' ORDER BY s.nct_id",
        {"today": today})
    stale = next(r for r in rows if r["stale"])
    fresh = next(r for r in rows if r["stale"] is False)
    at = _page(nct=stale["nct_id"])
    marks = [w.value for w in at.warning if "Status may be out of date" in w.value]
    assert len(marks) == 1
    if stale["updated"] is not None:
        assert f"last updated {stale['updated']:%B} {stale['updated'].day}, {stale['updated'].year}" in marks[0]
    assert trialview.status_freshness(search.trial_detail(stale["nct_id"], db=db), today) == marks[0]
    at = _page(nct=fresh["nct_id"])
    assert not [w for w in at.warning if "Status may be out of date" in w.value]
    # The comparison table carries the mark too.
    table = trialview.comparison([search.trial_detail(stale["nct_id"], db=db), search.trial_detail(fresh["nct_id"], db=db)])
    assert table.loc["Status"].tolist() == ["Recruiting (status may be out of date)", "Recruiting"]


def test_trials_page_checks_the_live_status_on_request(db, monkeypatch):
    """The stale mark stays until the visitor asks; the live answer (from a local fake ClinicalTrials.gov) then takes
    its place and says what changed; offline, the mark stays and a message says the look-up failed."""
    from tests.fake_ctgov import fake_ctgov
    from tests.test_live import _record

    today = dt.date.today()
    nct = db.fetch_value(
        "SELECT s.nct_id FROM ctgov.studies s WHERE upper(replace(s.overall_status, ' ', '_')) = 'RECRUITING' AND "
        "(s.primary_completion_date < CAST(:today AS date) OR coalesce(s.last_update_posted_date, "
        "s.last_update_submitted_date) < CAST(:today AS date) - 730) ORDER BY s.nct_id LIMIT 1", {"today": today})
    with fake_ctgov([_record(nct, "COMPLETED")]) as fake:
        monkeypatch.setenv("CTGOV_API_URL", fake.url)
        at = _page(nct=nct)
        assert [w.value for w in at.warning if "Status may be out of date" in w.value]
        assert fake.arrivals == []  # nothing is asked before the visitor presses the button
        at.button(key="live_detail").click().run()
        assert not at.exception
        [changed] = [w.value.replace("\\", "") for w in at.warning if "ClinicalTrials\\.gov now shows" in w.value]
        assert "“Completed”" in changed and "says “Recruiting”" in changed
        assert not [w for w in at.warning if "Status may be out of date" in w.value]
        assert [a.path for a in fake.arrivals] == [f"/api/v2/studies/{nct}"]
    monkeypatch.setenv("CTGOV_API_URL", "http://127.0.0.1:9/api/v2")  # nobody listens there
    at = _page(nct=nct)
    at.button(key="live_detail").click().run()
    assert [w for w in at.warning if "Status may be out of date" in w.value]
    assert [i.value for i in at.info if "Could not reach ClinicalTrials\\.gov" in i.value]


def test_export_csv_prefixes_text_a_spreadsheet_would_run_as_a_formula():
    # Trial records are untrusted: a title like =HYPERLINK(...) opened as a live formula in Excel or LibreOffice.
    # Text cells starting with = + - @ tab or CR get a leading ' (OWASP); numbers, even negative, stay numbers.
    hostile = ["=HYPERLINK(\"http://x\")", "+1", "-2+3", "@SUM(A1)", "\tx", "\r=1", "a=b", "a\rb", None]
    df = pd.DataFrame({"t": hostile, "n": [-1, 2, -3.5, 4, 5, 6, 7, 8, 9],
                       "o": [-1, "-x", None, [1], dt.date(2020, 1, 2), 2.5, -7, "ok", True]})
    back = pd.read_csv(io.BytesIO(export.to_csv_bytes(df)), keep_default_na=False, dtype=str)
    assert back["t"].tolist() == ["'=HYPERLINK(\"http://x\")", "'+1", "'-2+3", "'@SUM(A1)", "'\tx", "'\r=1", "a=b",
                                  "a\rb", ""]
    assert back["n"].tolist() == ["-1.0", "2.0", "-3.5", "4.0", "5.0", "6.0", "7.0", "8.0", "9.0"]
    assert back["o"].tolist() == ["-1", "'-x", "", "[1]", "2020-01-02", "2.5", "-7", "ok", "True"]
    cat = pd.DataFrame({"c": pd.Categorical(["=x", "y", "=x"])})
    assert export.to_csv_bytes(cat).decode().split() == ["c", "'=x", "y", "'=x"]
    assert [r["t"] for r in json.loads(export.to_json_bytes(df))] == hostile  # JSON is data, not a sheet: as is
