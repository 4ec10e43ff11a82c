"""SQL people already have for AACT runs here unchanged: 20 queries from public repositories (each file names its
source), schema prefixes ctgov./public./ctgov_v2., AACT's views and ids_for_term, and EXPLAIN."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from services import console
from services.cli import main as cli_main
from services.data import sqlcompat
from services.data.loaders.aact_schema import TABLES
from services.errors import UnsafeQuery

QUERIES = sorted((Path(__file__).parent / "fixtures" / "aact_queries").glob("*.sql"))


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


QUERY_TIMEOUT_MS = 600_000


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(argv)
    return code, out.getvalue(), err.getvalue()


def test_aact_queries_are_twenty_with_named_sources():
    assert len(QUERIES) >= 20
    for path in QUERIES:
        first = _text(path).splitlines()[0]
        assert first.startswith("-- source: github.com/"), path.name


@pytest.mark.parametrize("path", QUERIES, ids=[p.stem for p in QUERIES])
def test_aact_query_runs_in_console_and_cli(db, path, monkeypatch):
    # What is tested is that AACT's own queries run here, not how fast: a few join most of the sample and take
    # longer than the console's 30 s on a heavily loaded machine, so both paths get a generous limit.
    monkeypatch.setenv("SQL_TIMEOUT_MS", str(QUERY_TIMEOUT_MS))
    sql = _text(path)
    result = console.run_query(sql, db=db, timeout_ms=QUERY_TIMEOUT_MS)
    assert result.columns
    code, out, err = _cli(["sql", sql, "--json"])
    assert code == 0, err
    assert json.loads(out)["columns"] == list(result.columns)


def test_schema_prefixes_mean_the_trial_tables(db):
    want = db.fetch_value("SELECT count(*) FROM ctgov.conditions")
    for prefix in ("", "ctgov.", "public.", "ctgov_v2.", '"public".', "CTGOV_V2."):
        result = console.run_query(f"SELECT count(*) FROM {prefix}conditions", db=db)
        assert result.rows == ((want,),), prefix
    # Views and helper functions too.
    n = db.fetch_value("SELECT count(*) FROM ctgov.all_conditions")
    assert console.run_query("SELECT count(*) FROM public.all_conditions", db=db).rows == ((n,),)
    ids = db.fetch_value("SELECT count(*) FROM ctgov.ids_for_term('%cancer%')")
    assert console.run_query("SELECT count(*) FROM ids_for_term('%cancer%')", db=db).rows == ((ids,),)
    # Unknown names in those schemas keep the console's refusal, and so do literals that look like prefixes.
    with pytest.raises(UnsafeQuery, match="public.notes is outside the trial data"):
        console.check("SELECT * FROM public.notes")
    assert "'public.studies'" in console.check("SELECT 'public.studies' AS s FROM studies").sql


def test_every_table_and_view_is_known_to_the_rewriter(db):
    rows = db.fetch_rows("SELECT table_name FROM information_schema.tables WHERE table_schema = 'ctgov'")
    assert {r["table_name"] for r in rows} == sqlcompat.CTGOV_RELATIONS
    assert set(TABLES) <= sqlcompat.CTGOV_RELATIONS


def test_the_database_has_every_aact_column_in_order(db):
    """A new database's ctgov tables are TABLES, read from the schema files' CREATE TABLE statements."""
    rows = db.fetch_rows("SELECT table_name, column_name, data_type, numeric_precision, numeric_scale "
                         "FROM information_schema.columns "
                         "WHERE table_schema = 'ctgov' AND table_name = ANY(:t) ORDER BY table_name, ordinal_position",
                         {"t": list(TABLES)})
    spelled = {"character varying": "varchar", "timestamp without time zone": "timestamp"}
    found: dict[str, list[tuple[str, str]]] = {}
    for r in rows:
        kind = spelled.get(r["data_type"], r["data_type"])
        if kind == "numeric" and r["numeric_precision"] is not None:  # numeric(10,6): the loaders check its range
            kind += f"({r['numeric_precision']},{r['numeric_scale']})"
        found.setdefault(r["table_name"], []).append((r["column_name"], kind))
    assert len(TABLES) == 47
    assert found == {t: list(cols) for t, cols in TABLES.items()}


def test_the_upgrade_of_an_older_database_adds_every_aact_column():
    """003's DO block gives an older database each missing column: its list is TABLES but the id columns."""
    sql = (Path(__file__).parents[1] / "sql" / "schema" / "003_ctgov_aact_tables.sql").read_text(encoding="utf-8")
    listed = re.findall(r"^\s*\('(\w+)', '(\w+)', '([^']+)'\)", sql, flags=re.M)
    want = [(t, c, ty) for t, cols in TABLES.items() for c, ty in cols if c != "id"]
    assert [(t, c, ty.split(" NOT NULL")[0].replace(", ", ",")) for t, c, ty in listed] == want


def test_explain_shows_the_plan(db):
    result = console.run_query("EXPLAIN SELECT count(*) FROM ctgov.studies WHERE overall_status = :s",
                               {"s": "RECRUITING"}, db=db)
    assert result.columns == ("QUERY PLAN",)
    assert any("studies" in str(row[0]) for row in result.rows)
    analysed = console.run_query("EXPLAIN (ANALYZE, FORMAT JSON) SELECT count(*) FROM public.studies", db=db)
    plan = analysed.rows[0][0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    assert "Execution Time" in plan[0]
    code, out, err = _cli(["sql", "EXPLAIN ANALYZE SELECT 1"])
    assert code == 0 and "actual time" in out, err


@pytest.mark.parametrize(("sql", "reason"), [
    ("EXPLAIN ANALYZE DELETE FROM ctgov.studies", "DELETE is not allowed because it removes rows"),
    ("EXPLAIN (ANALYZE) INSERT INTO ctgov.studies (nct_id) VALUES ('x')", "INSERT is not allowed because it adds rows"),
    ("EXPLAIN (SETTINGS) SELECT 1", "SETTINGS is not allowed because it prints server settings"),
    ("EXPLAIN SELECT * FROM pg_catalog.pg_authid", "pg_catalog.pg_authid is a PostgreSQL system relation"),
    ("EXPLAIN", "EXPLAIN needs the SELECT"),
    ("SELECT * FROM app.sessions", "app.sessions is outside the trial data"),
])
def test_refusals_keep_their_reasons(sql, reason):
    with pytest.raises(UnsafeQuery, match=reason.replace(".", r"\.").replace("(", r"\(")):
        console.check(sql)


def test_classic_spellings_through_the_v_views(db):
    recruiting = db.fetch_value("SELECT count(*) FROM ctgov.studies WHERE overall_status = 'RECRUITING'")
    assert console.run_query("SELECT count(*) FROM v_studies WHERE overall_status = 'Recruiting'",
                             db=db).rows == ((recruiting,),)
    withdrawn = db.fetch_value("SELECT count(*) FROM ctgov.studies WHERE overall_status = 'WITHDRAWN'")
    assert console.run_query("SELECT count(*) FROM ctgov.v_studies WHERE overall_status = 'Withdrawn'",
                             db=db).rows == ((withdrawn,),)
    both = db.fetch_value("SELECT count(*) FROM ctgov.studies WHERE phase = 'PHASE1/PHASE2'")
    assert console.run_query("SELECT count(*) FROM v_studies WHERE phase = 'Phase 1/Phase 2'",
                             db=db).rows == ((both,),)
