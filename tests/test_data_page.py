"""The Data page says how the dashboard is computed on the connected database."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from services import dbinfo, stats, ui_state

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "6_Data.py")


def _data_page() -> AppTest:
    ui_state._cached_call.clear()  # database_info is cached across sessions
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception, at.exception
    return at


def test_data_page_names_the_in_process_engine(db):
    stats.forget_derived_check()
    at = _data_page()
    text = " ".join(m.value for m in at.markdown)
    assert "**In-process engine.**" in text and "loaded once per start" in text
    assert not [w for w in at.warning if "Direct queries" in w.value]
    assert dbinfo.database_info(db)["engine"]["mode"] == "memory"


def test_data_page_warns_when_charts_come_from_the_base_tables(db, monkeypatch):
    monkeypatch.setattr(stats, "derived_available", lambda _db: False)  # a read-only AACT without app tables
    at = _data_page()
    warnings = [w.value for w in at.warning if "Direct queries on AACT's base tables" in w.value]
    assert len(warnings) == 1 and "python -m services import aact" in warnings[0]
    assert dbinfo.database_info(db)["engine"]["mode"] == "direct"
    ui_state._cached_call.clear()


def test_data_page_names_the_sql_engine_when_chosen(db, monkeypatch):
    monkeypatch.setenv("TRIAL_LANDSCAPE_FACET_ENGINE", "sql")
    stats.forget_derived_check()
    at = _data_page()
    assert "**SQL over the derived tables.**" in " ".join(m.value for m in at.markdown)
    ui_state._cached_call.clear()
