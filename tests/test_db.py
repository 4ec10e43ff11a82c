"""The database door: typed errors, timeouts, concurrency, read-only mode, health."""

from __future__ import annotations

import time

import pandas as pd
import pytest

from services.data import embedded
from services.data.db import Database, describe_url, to_async_url
from services.errors import DatabaseUnavailable, QueryFailed, QueryTimeout, ResultTooLarge


def test_db_fetch_df_converts_numeric(db):
    df = db.fetch_df("SELECT CAST(1.5 AS numeric(10, 6)) AS x, 'a' AS y")
    assert df.to_dict("records") == [{"x": 1.5, "y": "a"}]


def test_db_statement_timeout_raises_query_timeout(db):
    with pytest.raises(QueryTimeout):
        db.fetch_df("SELECT pg_sleep(2)", timeout_ms=100)
    # the pool is still usable afterwards
    assert db.fetch_value("SELECT 41 + 1") == 42


def test_db_bad_sql_raises_query_failed(db):
    with pytest.raises(QueryFailed) as info:
        db.fetch_df("SELECT no_such_column FROM ctgov.studies")
    assert "no_such_column" in str(info.value)


def test_db_fetch_many_runs_concurrently_and_isolates_failures(db):
    """Concurrency is judged by the server's own clock, not by wall time (which a busy machine stretches): the three
    short queries were all running at one instant — each started before any of them ended."""
    db.fetch_many({k: ("SELECT 1", None) for k in "abcd"})  # the pool's connections exist before the clocks start
    timed = "SELECT clock_timestamp() AS t0, pg_sleep(0.4), clock_timestamp() AS t1, {v} AS v"
    out = db.fetch_many({
        "a": (timed.format(v=1), None),
        "b": (timed.format(v=2), None),
        "c": (timed.format(v=3), None),
        "slow": ("SELECT pg_sleep(3)", None),
    }, timeout_ms=1000)
    assert [out[k]["v"].tolist() for k in "abc"] == [[1], [2], [3]]
    assert isinstance(out["slow"], QueryTimeout)
    # one after another, each would start only after the previous ended
    assert max(out[k]["t0"].iloc[0] for k in "abc") < min(out[k]["t1"].iloc[0] for k in "abc")


def test_db_fetch_df_parts_types_the_rows_as_one_query_would(db):
    """A part whose column is all NULL does not turn the whole column into objects: the rows are typed together."""
    parts = [("SELECT 1 AS n, 'a' AS t UNION ALL SELECT 2, 'b'", None), ("SELECT CAST(NULL AS int) AS n, 'c' AS t", None)]
    together = db.fetch_df_parts(parts)
    assert together.equals(db.fetch_df(" UNION ALL ".join(f"({sql})" for sql, _ in parts)))
    assert together["n"].dtype == "float64" and together["t"].tolist() == ["a", "b", "c"]
    with pytest.raises(QueryFailed):
        db.fetch_df_parts([("SELECT 1 AS n", None), ("SELECT no_such_column FROM ctgov.studies", None)])


def test_db_read_only_mode_refuses_writes(db):
    studies = db.fetch_value("SELECT count(*) FROM ctgov.studies")
    ro = Database(db.url, read_only=True)
    try:
        with pytest.raises(QueryFailed):
            ro.execute("DELETE FROM ctgov.studies")
        with pytest.raises(QueryFailed):
            ro.fetch_df("CREATE TEMP TABLE x AS SELECT 1")  # the server itself refuses
        assert ro.health().read_only
        assert ro.fetch_value("SELECT count(*) FROM ctgov.studies") == studies > 0
    finally:
        ro.close()


def test_db_health_reports_version(db):
    health = db.health()
    assert health.ok and health.server_version.split(".")[0] in {"15", "16", "17", "18"}


def test_db_describe_url_hides_password():
    text = describe_url("postgresql://alice:s3cret@aact-db.example.org:5432/aact")
    assert text == "aact-db.example.org:5432/aact" and "s3cret" not in text


def test_db_describe_url_survives_an_unreadable_port():
    # urlsplit reads the port only when asked, and then raises ValueError: a typo in DATABASE_URL's port made
    # Database() itself fail (its label is this description) instead of the health check reporting it.
    for url in ("postgresql://alice:s3cret@db.example.org:54x2/aact", "postgresql://alice:s3cret@db.example.org:99999/aact"):
        text = describe_url(url)
        assert text == "db.example.org (unreadable port)/aact" and "s3cret" not in text
    bad = Database("postgresql://alice:s3cret@db.example.org:54x2/aact")
    try:
        health = bad.health()
        assert not health.ok and "s3cret" not in health.error
    finally:
        bad.close()


def test_db_libpq_sslmode_in_the_url_reaches_asyncpg_as_ssl(db):
    # The README's AACT cloud address ends in ?sslmode=require, libpq's spelling; asyncpg takes ssl=… and refused
    # the whole address ("connect() got an unexpected keyword argument 'sslmode'") before trying to connect.
    assert to_async_url("postgresql://u:p@h:5432/aact?sslmode=require") == "postgresql+asyncpg://u:p@h:5432/aact?ssl=require"
    assert to_async_url("postgres://u@h/a?application_name=x&sslmode=disable") == \
        "postgresql+asyncpg://u@h/a?application_name=x&ssl=disable"
    assert to_async_url("postgresql://u:pa&sslmode=x@h/a") == "postgresql+asyncpg://u:pa&sslmode=x@h/a"  # no query
    joiner = "&" if "?" in db.url else "?"
    plain = Database(f"{db.url}{joiner}sslmode=disable", pool_size=1)
    try:
        assert plain.health().ok  # the test server speaks plain TCP or a socket: sslmode=disable connects
    finally:
        plain.close()


def test_db_unreachable_server_raises_database_unavailable():
    bad = Database("postgresql://postgres@127.0.0.1:1/none")
    try:
        with pytest.raises(DatabaseUnavailable):
            bad.fetch_df("SELECT 1")
        assert not bad.health().ok
    finally:
        bad.close()


@pytest.mark.skipif(bool(__import__("os").environ.get("TEST_DATABASE_URL")),
                    reason="stops an embedded server of its own; the external server is not ours to stop")
def test_db_stopped_server_raises_database_unavailable_then_recovers(scratch_dir):
    pgdata = scratch_dir / "pg"
    uri = embedded.start(pgdata)
    own = Database(uri)
    try:
        assert own.fetch_value("SELECT 1") == 1
        embedded.stop(pgdata)
        with pytest.raises(DatabaseUnavailable):
            own.fetch_df("SELECT 1")
        embedded.start(pgdata)
        deadline = time.time() + 15
        while True:
            try:
                assert own.fetch_value("SELECT 2") == 2
                break
            except DatabaseUnavailable:
                if time.time() > deadline:
                    raise
                time.sleep(0.3)
    finally:
        own.close()
        embedded.wipe(pgdata)


def test_db_frame_shape(db):
    df = db.fetch_df("SELECT nct_id FROM ctgov.studies WHERE nct_id = :n", {"n": "NCT05923281"})
    assert isinstance(df, pd.DataFrame) and df["nct_id"].tolist() == ["NCT05923281"]


def test_db_every_statement_is_planned_for_its_own_values(db):
    # asyncpg prepares statements; after five runs PostgreSQL may keep a generic plan that ignores the values, which
    # for an id list (unnest of a parameter) took the relevance order at 575,000 studies past its time limit.
    assert db.fetch_value("SHOW plan_cache_mode") == "force_custom_plan"
    ids = [f"NCT{n:08d}" for n in range(50)]
    for size in (1, 2, 3, 5, 8, 13, 50):  # the same statement more than five times on the pool's connection
        plan = "\n".join(r["QUERY PLAN"] for r in db.fetch_rows(
            "EXPLAIN SELECT count(*) FROM unnest(CAST(:ids AS text[])) AS u(id)", {"ids": ids[:size]}))
        assert "$1" not in plan, plan  # a custom plan holds the value itself, a generic one the placeholder


@pytest.mark.parametrize("value", ["0", "-5", " -1 "])
def test_db_statement_timeout_setting_below_one_millisecond_is_refused_at_start(monkeypatch, value):
    # 0 used to switch the time limit off for every query, and a negative value made every query fail.
    from services.data import runtime
    from services.errors import BadInput

    monkeypatch.setenv("STATEMENT_TIMEOUT_MS", value)
    with pytest.raises(BadInput, match=r"STATEMENT_TIMEOUT_MS=.* must be a whole number of at least 1 "):
        runtime._timeout()
    monkeypatch.setenv("STATEMENT_TIMEOUT_MS", "250")
    assert runtime._timeout() == 250


@pytest.mark.parametrize("name", ["STATEMENT_TIMEOUT_MS", "DB_POOL_SIZE"])
@pytest.mark.parametrize("value", ["abc", "30s", "1.5", " 2 000 "])
def test_db_numeric_settings_that_are_not_whole_numbers_are_refused_at_start(monkeypatch, name, value):
    # "abc" used to give the default silently, so a mistyped time limit went unnoticed.
    from services.data import runtime
    from services.errors import BadInput

    read = {"STATEMENT_TIMEOUT_MS": runtime._timeout, "DB_POOL_SIZE": runtime._pool_size}[name]
    monkeypatch.setenv(name, value)
    with pytest.raises(BadInput, match=rf"^{name}='{value.strip()}' is not allowed: it must be a whole"):
        read()
    monkeypatch.setenv(name, " 3 ")
    assert read() == 3
    monkeypatch.setenv(name, "")
    assert read() == {"STATEMENT_TIMEOUT_MS": 15_000, "DB_POOL_SIZE": 5}[name]


def test_db_fetch_guarded_a_large_value_past_the_row_cap_is_not_refused(db):
    # The one row fetched past max_rows only tells that there are more; a value in it over the per-value cap used
    # to stop the whole query with ResultTooLarge, for a value the user would never see.
    sql = "SELECT v FROM (VALUES (1, 'a'), (2, repeat('x', 100))) AS t(k, v) ORDER BY k"
    assert db.fetch_guarded(sql, max_rows=1, max_value_bytes=10) == (["v"], [("a",)], "rows")
    with pytest.raises(ResultTooLarge):
        db.fetch_guarded(sql, max_rows=2, max_value_bytes=10)


def test_db_fetch_df_converts_a_numeric_column_whose_first_values_are_null(db):
    # Only the first 50 values were looked at: a numeric column NULL there stayed a column of Decimal objects.
    df = db.fetch_df("SELECT CASE WHEN g > 60 THEN g::numeric / 2 END AS x FROM generate_series(1, 61) AS g ORDER BY g")
    assert df["x"].dtype == "float64"
    assert df["x"].iloc[-1] == 30.5 and df["x"].iloc[:60].isna().all()
