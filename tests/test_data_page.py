"""The Data page says how the dashboard is computed on the connected database."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from services.dashboard import dbinfo, engine, facetstore
from services.ui import state as ui_state

PAGE = str(Path(__file__).resolve().parent.parent / "app_pages" / "data.py")


def _data_page() -> AppTest:
    ui_state.clear_cache()  # database_info is cached across sessions
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception, at.exception
    return at


def test_data_page_names_the_in_process_engine(db):
    engine.forget()
    # Loaded first, as a server's start does: the page names how this start got the arrays (whether the
    # page itself would load them or answer by SQL meanwhile depends on a start cache an earlier test left).
    store = facetstore.store_for(db)
    at = _data_page()
    text = " ".join(m.value for m in at.markdown)
    assert "**In-process engine.**" in text and "loaded once per start" in text
    assert facetstore.loaded(db) is store
    how = "mapped from the start cache" if store.from_cache else "loaded from the database"
    assert f"This start: {store.n:,} studies {how} in" in text
    assert not [w for w in at.warning if "SQL engine" in w.value]
    assert dbinfo.database_info(db)["engine"]["mode"] == "memory"


def test_data_page_warns_when_charts_come_from_the_base_tables(db, monkeypatch):
    monkeypatch.setattr(engine, "derived_available", lambda _db: False)  # a read-only AACT without app tables
    engine.forget()
    at = _data_page()
    warnings = [w.value for w in at.warning if "SQL engine: queries on AACT's base tables" in w.value]
    assert len(warnings) == 1 and "python -m services import aact" in warnings[0]
    assert dbinfo.database_info(db)["engine"]["mode"] == "sql"
    ui_state.clear_cache()
    engine.forget()


def test_data_page_names_the_sql_engine_when_chosen(db, monkeypatch):
    monkeypatch.setenv(engine.ENGINE_SETTING, "sql")
    engine.forget()
    at = _data_page()
    warnings = [w.value for w in at.warning if "**SQL engine: queries on AACT's base tables.**" in w.value]
    assert len(warnings) == 1 and f"{engine.ENGINE_SETTING}=sql" in warnings[0]
    ui_state.clear_cache()
    engine.forget()


def test_data_page_counts_full_and_partial_records(db, raw_v2, raw_csv):
    at = _data_page()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Studies"] == f"{len(raw_v2) + len(raw_csv):,}"
    assert metrics["Full records"] == f"{len(raw_v2):,}"
    text = " ".join(m.value for m in at.markdown)
    assert f"**{len(raw_csv):,} partial records**" in text and "not in this copy — see ClinicalTrials.gov" in text
    ui_state.clear_cache()


def test_data_page_counts_every_record_as_full_without_the_provenance_table(db, monkeypatch):
    from services.data import provenance

    monkeypatch.setattr(provenance, "available", lambda _db: False)  # a read-only AACT without app tables
    studies = int(db.fetch_value("SELECT count(*) FROM ctgov.studies"))
    at = _data_page()
    assert {m.label: m.value for m in at.metric}["Full records"] == f"{studies:,}"
    assert provenance.lookup(db, str(db.fetch_value("SELECT min(nct_id) FROM ctgov.studies"))).partial is False
    assert any("every record counts as full" in c.value for c in at.caption)
    ui_state.clear_cache()


def test_data_page_and_db_info_list_all_aact_tables(db):
    """All 47 AACT study tables with their row counts, on the page and in `db info --json`."""
    import contextlib
    import io
    import json

    from services.cli import main as cli_main
    from services.data.loaders.aact_schema import TABLES

    want = {t: db.fetch_value(f"SELECT count(*) FROM ctgov.{t}") for t in TABLES}
    assert len(want) == 47
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["db", "info", "--json"]) == 0
    info = json.loads(out.getvalue())
    assert info["tables"] == want
    assert info["server_version"] == db.fetch_value("SHOW server_version")  # which PostgreSQL answers
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["db", "info"]) == 0
    assert f"PostgreSQL {info['server_version']}" in out.getvalue().splitlines()[0]
    at = _data_page()
    shown = {row["table"]: row["rows"] for row in at.dataframe[0].value.to_dict("records")}
    assert shown == want


def test_home_links_every_page_of_the_navigation(db):
    # Home's "Where to go" linked six of the nine pages: Compare, Sites and Timeline were missing, and its intro
    # named only four of the seven pages that share the sidebar's filters.
    from services.ui import pages

    at = AppTest.from_file(str(Path(PAGE).parent.parent / "navigation.py"), default_timeout=120).run()
    assert not at.exception, at.exception
    labels = [link.proto.label for link in at.get("page_link")]
    assert [label.split(" — ")[0] for label in labels] == [p.title for p in pages.PAGES if p.title != "Home"]
    intro = at.markdown[0].value
    for page in ("Explore", "Compare", "Map", "Sites", "Timeline", "Trials", "Assistant"):
        assert page in intro


def test_no_pages_folder_beside_the_navigation() -> None:
    # A folder called pages/ beside the main script puts a fresh server's first run into Streamlit's older
    # folder mode, which looks up /SQL as the file "sql" and answers "Page not found" to the first deep link.
    from services.ui import pages

    project = Path(PAGE).parent.parent
    assert not (project / "pages").exists()
    assert all((project / page.path).is_file() for page in pages.PAGES)
