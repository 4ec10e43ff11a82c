"""Tests for the SQL console guard: hostile input is refused with its reason, analysis passes intact."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest

from services import sqlguard
from services.errors import BadInput, UnsafeQuery
from services.sqlguard import MAX_CHARS, GuardedQuery, check_query
from tests.sql_examples import EXAMPLES

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "sql" / "examples"

_NOT_SELECT = "only a single SELECT query can run here"

# (id, sql, text the refusal must contain)
HOSTILE: list[tuple[str, str, str]] = [
    # data changes
    ("insert", "INSERT INTO ctgov.studies (nct_id) VALUES ('NCT00000000')", "INSERT is not allowed because it adds rows"),
    ("update", "UPDATE ctgov.studies SET phase = 'PHASE4'", "UPDATE is not allowed because it changes rows"),
    ("delete", "DELETE FROM ctgov.studies", "DELETE is not allowed because it removes rows"),
    ("merge", "MERGE INTO ctgov.studies t USING ctgov.sponsors s ON t.nct_id = s.nct_id WHEN MATCHED THEN DELETE",
     "MERGE is not allowed"),
    ("insert_after_with", "WITH x AS (SELECT 1 AS a) INSERT INTO t SELECT a FROM x", "INSERT is not allowed"),
    ("truncate", "TRUNCATE ctgov.studies", "TRUNCATE is not allowed because it empties tables"),
    ("copy_to_file", "COPY ctgov.studies TO '/tmp/studies.csv'", "COPY is not allowed"),
    ("copy_from_program", "COPY ctgov.studies FROM PROGRAM 'cat /etc/passwd'", "COPY is not allowed"),
    ("copy_query_to_stdout", "COPY (SELECT * FROM ctgov.studies) TO STDOUT", "COPY is not allowed"),
    # schema and permission changes
    ("create_table", "CREATE TABLE notes (body text)", "CREATE is not allowed"),
    ("create_table_as", "CREATE TABLE copy AS SELECT * FROM ctgov.studies", "CREATE is not allowed because it creates a table"),
    ("create_function", "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1'", "CREATE is not allowed"),
    ("create_extension", "CREATE EXTENSION dblink", "CREATE is not allowed"),
    ("create_view", "CREATE VIEW v AS SELECT * FROM ctgov.studies", "CREATE is not allowed"),
    ("create_index", "CREATE INDEX ON ctgov.studies (phase)", "CREATE is not allowed"),
    ("alter_table", "ALTER TABLE ctgov.studies ADD COLUMN note text", "ALTER is not allowed"),
    ("alter_system", "ALTER SYSTEM SET max_connections = 5", "ALTER SYSTEM is not allowed"),
    ("drop_table", "DROP TABLE ctgov.studies", "DROP is not allowed"),
    ("drop_schema", "DROP SCHEMA ctgov CASCADE", "DROP is not allowed"),
    ("grant", "GRANT ALL ON ctgov.studies TO PUBLIC", "GRANT is not allowed because it changes permissions"),
    ("revoke", "REVOKE SELECT ON ctgov.studies FROM PUBLIC", "REVOKE is not allowed because it changes permissions"),
    ("comment", "COMMENT ON TABLE ctgov.studies IS 'gone'", "COMMENT is not allowed"),
    ("refresh_matview", "REFRESH MATERIALIZED VIEW ctgov.summary", "REFRESH MATERIALIZED VIEW is not allowed"),
    ("reindex", "REINDEX TABLE ctgov.studies", "REINDEX is not allowed"),
    # session and transaction control
    ("set_role", "SET ROLE postgres", "SET ROLE is not allowed"),
    ("set_session_authorization", "SET SESSION AUTHORIZATION postgres", "SET SESSION AUTHORIZATION is not allowed"),
    ("set_statement_timeout", "SET statement_timeout = 0", "SET is not allowed"),
    ("set_transaction_read_write", "SET TRANSACTION READ WRITE", "SET TRANSACTION is not allowed"),
    ("reset_role", "RESET ROLE", "RESET is not allowed"),
    ("reset_all", "RESET ALL", "RESET is not allowed"),
    ("show", "SHOW data_directory", "SHOW is not allowed because it reveals server settings"),
    ("begin", "BEGIN", "BEGIN is not allowed"),
    ("start_transaction", "START TRANSACTION READ WRITE", "START TRANSACTION is not allowed"),
    ("commit", "COMMIT", "COMMIT is not allowed"),
    ("rollback", "ROLLBACK", "ROLLBACK is not allowed"),
    ("savepoint", "SAVEPOINT s1", "SAVEPOINT is not allowed"),
    ("prepare", "PREPARE p AS SELECT 1", "PREPARE is not allowed"),
    ("execute", "EXECUTE p", "EXECUTE is not allowed"),
    ("deallocate", "DEALLOCATE ALL", "DEALLOCATE is not allowed"),
    ("do_block", "DO $$ BEGIN PERFORM pg_sleep(10); END $$", "DO is not allowed because it runs procedural code"),
    ("call", "CALL refresh_everything()", "CALL is not allowed"),
    ("listen", "LISTEN jobs", "LISTEN is not allowed"),
    ("notify", "NOTIFY jobs, 'hello'", "NOTIFY is not allowed"),
    ("lock", "LOCK TABLE ctgov.studies IN ACCESS EXCLUSIVE MODE", "LOCK is not allowed"),
    ("vacuum", "VACUUM FULL ctgov.studies", "VACUUM is not allowed"),
    ("analyze", "ANALYZE ctgov.studies", "ANALYZE is not allowed"),
    ("explain_analyze", "EXPLAIN ANALYZE SELECT * FROM ctgov.studies", "EXPLAIN ANALYZE is not allowed"),
    ("explain_analyze_delete", "EXPLAIN (ANALYZE, BUFFERS) DELETE FROM ctgov.studies", "EXPLAIN ANALYZE is not allowed"),
    ("explain", "EXPLAIN SELECT * FROM ctgov.studies", "EXPLAIN is not allowed because the console shows results"),
    ("load", "LOAD 'plpython3u'", "LOAD is not allowed"),
    ("declare_cursor", "DECLARE c CURSOR FOR SELECT * FROM ctgov.studies", "DECLARE is not allowed"),
    ("discard", "DISCARD ALL", "DISCARD is not allowed"),
    ("checkpoint", "CHECKPOINT", "CHECKPOINT is not allowed"),
    # more than one statement
    ("two_statements", "SELECT 1; DROP TABLE ctgov.studies", "holds 2 statements"),
    ("two_selects", "SELECT 1; SELECT 2", "holds 2 statements"),
    ("after_line_comment", "SELECT 1 -- harmless\n; DELETE FROM ctgov.studies", "holds 2 statements"),
    ("after_block_comment", "SELECT 1 /* ; */ ; /* and */ DELETE FROM ctgov.studies", "holds 2 statements"),
    ("three_statements", "BEGIN; DELETE FROM ctgov.studies; COMMIT;", "holds 3 statements"),
    ("greek_question_mark", "SELECT 1 \u037e DROP TABLE ctgov.studies", "U+037E (GREEK QUESTION MARK)"),
    ("fullwidth_semicolon", "SELECT 1 \uff1bDROP TABLE ctgov.studies", "U+FF1B (FULLWIDTH SEMICOLON)"),
    ("small_semicolon", "SELECT 1 \ufe54 DELETE FROM ctgov.studies", "U+FE54 (SMALL SEMICOLON)"),
    ("nul_hides_statement", "SELECT 1\x00; DROP TABLE ctgov.studies", "control character U+0000"),
    ("zero_width_space", "SELECT 1\u200b", "U+200B (ZERO WIDTH SPACE)"),
    ("fullwidth_letters", "SELECT \uff53\uff45\uff4c\uff45\uff43\uff54", "U+FF53"),
    ("no_break_space", "SELECT\u00a01", "U+00A0 (NO-BREAK SPACE)"),
    # data-modifying WITH
    ("cte_delete", "WITH gone AS (DELETE FROM ctgov.studies RETURNING *) SELECT count(*) FROM gone",
     'The WITH part "gone" is a DELETE'),
    ("cte_update", "WITH u AS (UPDATE ctgov.studies SET phase = NULL RETURNING nct_id) SELECT * FROM u",
     'The WITH part "u" is an UPDATE'),
    ("cte_insert", "WITH i AS (INSERT INTO notes VALUES ('x') RETURNING *) SELECT * FROM i",
     'The WITH part "i" is an INSERT'),
    ("cte_merge", "WITH m AS (MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN DELETE RETURNING t.*) "
     "SELECT * FROM m", 'The WITH part "m" is a MERGE'),
    ("cte_second_part", "WITH a AS (SELECT 1), b AS (DELETE FROM ctgov.studies RETURNING 1) SELECT * FROM a",
     'The WITH part "b" is a DELETE'),
    # SELECT INTO and locking clauses
    ("select_into", "SELECT * INTO copy FROM ctgov.studies", "SELECT … INTO is not allowed"),
    ("select_into_temp", "SELECT nct_id INTO TEMP scratch FROM ctgov.studies", "SELECT … INTO is not allowed"),
    ("for_update", "SELECT * FROM ctgov.studies FOR UPDATE", "FOR UPDATE is not allowed"),
    ("for_share", "SELECT * FROM ctgov.studies FOR SHARE NOWAIT", "FOR SHARE is not allowed"),
    ("for_no_key_update", "SELECT * FROM ctgov.studies FOR NO KEY UPDATE", "FOR NO KEY UPDATE is not allowed"),
    ("for_key_share", "SELECT * FROM ctgov.studies FOR KEY SHARE SKIP LOCKED", "FOR KEY SHARE is not allowed"),
    ("for_update_in_subquery",
     "SELECT * FROM ctgov.studies WHERE nct_id IN (SELECT nct_id FROM ctgov.sponsors FOR UPDATE)",
     "FOR UPDATE is not allowed"),
    ("for_update_in_cte", "WITH l AS (SELECT * FROM ctgov.studies FOR UPDATE) SELECT * FROM l",
     "FOR UPDATE is not allowed"),
    # functions that sleep, read files, change settings or touch other sessions
    ("pg_sleep", "SELECT pg_sleep(60)", "pg_sleep() is not allowed because it pauses"),
    ("pg_sleep_for_in_where", "SELECT 1 FROM ctgov.studies WHERE pg_sleep_for('1 minute') IS NULL",
     "pg_sleep_for() is not allowed"),
    ("pg_sleep_in_order_by", "SELECT nct_id FROM ctgov.studies ORDER BY pg_sleep(1)", "pg_sleep()"),
    ("pg_sleep_in_filter", "SELECT count(*) FILTER (WHERE pg_sleep(1) IS NULL) FROM ctgov.studies", "pg_sleep()"),
    ("pg_sleep_in_window",
     "SELECT rank() OVER (PARTITION BY pg_sleep(1)::text ORDER BY nct_id) FROM ctgov.studies", "pg_sleep()"),
    ("pg_sleep_in_named_window",
     "SELECT rank() OVER w FROM ctgov.studies WINDOW w AS (ORDER BY pg_sleep(1)::text)", "pg_sleep()"),
    ("pg_sleep_in_lateral",
     "SELECT * FROM ctgov.studies s, LATERAL (SELECT pg_sleep(1)) AS z", "pg_sleep()"),
    ("pg_sleep_in_cte", "WITH z AS (SELECT pg_sleep(1)) SELECT * FROM z", "pg_sleep()"),
    ("pg_sleep_in_argument", "SELECT * FROM generate_series(1, 3 + (SELECT count(*) FROM (SELECT pg_sleep(1)) q))",
     "pg_sleep()"),
    ("pg_sleep_in_values", "VALUES (1), (pg_sleep(5)::text::int)", "pg_sleep()"),
    ("pg_sleep_qualified", "SELECT pg_catalog.pg_sleep(60)", "pg_catalog.pg_sleep() is not allowed"),
    ("pg_sleep_quoted", 'SELECT "pg_sleep"(60)', "pg_sleep() is not allowed"),
    ("pg_read_file", "SELECT pg_read_file('/etc/passwd')", "reads or writes files on the database server"),
    ("pg_read_binary_file", "SELECT pg_read_binary_file('postgresql.auto.conf')", "reads or writes files"),
    ("pg_ls_dir", "SELECT * FROM pg_ls_dir('.')", "pg_ls_dir() is not allowed because it reads or writes files"),
    ("pg_stat_file", "SELECT pg_stat_file('postgresql.conf')", "reads or writes files"),
    ("lo_import", "SELECT lo_import('/etc/passwd')", "lo_import() is not allowed because it reads or writes files"),
    ("lo_export", "SELECT lo_export(16384, '/tmp/out')", "lo_export() is not allowed"),
    ("dblink", "SELECT * FROM dblink('dbname=postgres', 'SELECT 1') AS t(x int)", "connects to other databases"),
    ("dblink_exec", "SELECT dblink_exec('dbname=postgres', 'DROP TABLE t')", "connects to other databases"),
    ("set_config", "SELECT set_config('statement_timeout', '0', false)", "set_config() is not allowed because it changes server settings"),
    ("current_setting", "SELECT current_setting('data_directory')", "current_setting() is not allowed because it reads server settings"),
    ("pg_terminate_backend", "SELECT pg_terminate_backend(123)", "signals server processes"),
    ("pg_cancel_backend", "SELECT pg_cancel_backend(123)", "signals server processes"),
    ("pg_reload_conf", "SELECT pg_catalog.pg_reload_conf()", "signals server processes"),
    ("pg_advisory_lock", "SELECT pg_advisory_lock(42)", "pg_advisory_lock() is not allowed because it takes advisory locks"),
    ("pg_try_advisory_xact_lock", "SELECT pg_try_advisory_xact_lock(1, 2)", "advisory locks"),
    ("query_to_xml", "SELECT query_to_xml('DELETE FROM ctgov.studies RETURNING 1', true, false, '')",
     "runs SQL or reads tables named in a text argument"),
    ("table_to_xml", "SELECT table_to_xml('pg_authid', true, false, '')", "runs SQL or reads tables"),
    ("ts_stat", "SELECT * FROM ts_stat('SELECT to_tsvector(brief_title) FROM ctgov.studies')", "runs SQL"),
    ("nextval", "SELECT nextval('ctgov.studies_id_seq')", "nextval() is not allowed because it changes or reads sequence state"),
    ("setval", "SELECT setval('ctgov.studies_id_seq', 1)", "sequence state"),
    ("txid_current", "SELECT txid_current()", "txid_current() is not allowed because it assigns or inspects transaction IDs"),
    ("pg_notify", "SELECT pg_notify('jobs', 'x')", "sends notifications to other sessions"),
    ("admin_function", "SELECT pg_backend_pid()", "pg_backend_pid() is not allowed because it is a PostgreSQL administration function"),
    ("function_not_listed", "SELECT version()", "version() is not on the list of functions the console allows"),
    ("user_schema_function", "SELECT app.ids_for_term('asthma')", "only built-in functions may be called"),
    # system relations
    ("pg_stat_activity", "SELECT query FROM pg_stat_activity", "pg_stat_activity is a PostgreSQL system relation"),
    ("pg_authid", "SELECT rolpassword FROM pg_catalog.pg_authid", "pg_catalog.pg_authid is a PostgreSQL system relation"),
    ("pg_shadow", "SELECT passwd FROM pg_shadow", "pg_shadow is a PostgreSQL system relation"),
    ("pg_settings", "SELECT name, setting FROM pg_settings", "pg_settings is a PostgreSQL system relation"),
    ("pg_locks_in_join", "SELECT * FROM ctgov.studies s JOIN pg_locks l ON true", "pg_locks is a PostgreSQL system relation"),
    ("catalog_in_cte_body", "WITH a AS (SELECT usename FROM pg_catalog.pg_user) SELECT * FROM a",
     "pg_catalog.pg_user is a PostgreSQL system relation"),
    ("cte_shadowing_catalog", "WITH pg_stat_activity AS (SELECT * FROM pg_stat_activity) SELECT * FROM pg_stat_activity",
     "starts with pg_"),
    ("toast_schema", "SELECT * FROM pg_toast.pg_toast_2619", "pg_toast.pg_toast_2619 is a PostgreSQL system relation"),
    # a system catalog's row type, in a cast or a column list, shows the catalog's columns (rolpassword …)
    ("catalog_row_type", "SELECT (jsonb_populate_record(null::pg_catalog.pg_authid, '{}')).*",
     "pg_catalog.pg_authid is a PostgreSQL system type"),
    ("catalog_row_type_bare", "SELECT null::pg_shadow", "pg_shadow is a PostgreSQL system type"),
    ("catalog_row_type_array", "SELECT CAST(NULL AS _pg_user_mapping)", "_pg_user_mapping is a PostgreSQL system type"),
    ("catalog_row_type_column_list", "SELECT * FROM json_to_record('{}') AS x(a pg_authid[])",
     "pg_authid is a PostgreSQL system type"),
    ("toast_schema_type", "SELECT null::pg_toast.pg_toast_2619", "pg_toast.pg_toast_2619 is a PostgreSQL system type"),
    # bound parameters written another way
    ("positional_parameter", "SELECT * FROM ctgov.studies WHERE phase = $1", "Write bound parameters as :name"),
    ("psql_variable", "SELECT * FROM ctgov.studies WHERE phase = :'phase'", "not :'phase'"),
    # size and depth
    ("one_megabyte", "SELECT 1 AS x" + " " * 1_000_000, "characters long, over the limit of 100,000"),
    ("nested_10000_brackets", "SELECT " + "(" * 10_000 + "1" + ")" * 10_000, "nests brackets 10,000 levels deep"),
    ("nested_10000_subqueries", "SELECT " + "(SELECT " * 10_000 + "1" + ")" * 10_000,
     "nests brackets 10,000 levels deep"),
    ("nested_10000_arrays", "SELECT " + "ARRAY[" * 10_000 + "1" + "]" * 10_000, "nests brackets 10,000 levels deep"),
    ("operator_chain_49000", "SELECT " + "+".join(["1"] * 49_000), "nested too deeply"),
    ("not_chain_20000", "SELECT " + "NOT " * 20_000 + "true", "nested too deeply"),
    ("case_nesting_4000", "SELECT " + "CASE WHEN true THEN " * 4_000 + "1" + " END" * 4_000, "nested too deeply"),
    # empty input
    ("empty", "", "Type a SELECT query."),
    ("whitespace", "  \n\t ", "Type a SELECT query."),
    ("only_comments", "-- nothing here\n/* or here */", "Type a SELECT query."),
    ("only_semicolons", " ; ;; ", "Type a SELECT query."),
    # other
    ("tablesample_method", "SELECT * FROM ctgov.studies TABLESAMPLE system_time(1000)", "TABLESAMPLE system_time is not allowed"),
    ("operator_from_other_schema", "SELECT 1 OPERATOR(ctgov.+) 2", "Operators from schema ctgov are not allowed"),
    ("operator_from_other_schema_any_subquery", "SELECT 1 WHERE 1 OPERATOR(ctgov.=) ANY (SELECT 1)",
     "Operators from schema ctgov are not allowed"),
    ("operator_from_other_schema_order_by_using", "SELECT nct_id FROM ctgov.studies ORDER BY nct_id USING OPERATOR(ctgov.<)",
     "Operators from schema ctgov are not allowed"),
    ("syntax_error", "SELECT nct_id FROM ctgov.studies WHERE", "PostgreSQL cannot parse the query: syntax error at end of input"),
    ("unterminated_string", "SELECT 'open\nFROM ctgov.studies", "unterminated quoted string"),
    ("syntax_error_line", "SELECT nct_id\nFROM ctgov.studies\nWHERE phase = = 'PHASE1'", "(line 3)"),
]


@pytest.mark.parametrize(("sql", "reason"), [case[1:] for case in HOSTILE], ids=[case[0] for case in HOSTILE])
def test_sqlguard_refuses_hostile_input(sql: str, reason: str) -> None:
    with pytest.raises(UnsafeQuery) as caught:
        check_query(sql)
    message = str(caught.value)
    assert reason in message
    # One sentence: it ends with a full stop and no second sentence starts inside it.
    assert message.endswith(".")
    assert not re.search(r"[.!?] [A-Z]", message[:-1]), message


def test_sqlguard_hostile_cases_cover_the_brief() -> None:
    ids = [case[0] for case in HOSTILE]
    assert len(ids) == len(set(ids))
    assert len(HOSTILE) >= 60


def test_sqlguard_refusals_are_bad_input() -> None:
    with pytest.raises(BadInput, match="DROP is not allowed"):
        check_query("DROP TABLE ctgov.studies")


# Relations each legitimate example reads, schema-qualified, in order of first appearance.
EXPECTED_TABLES: dict[str, tuple[str, ...]] = {
    "trials_per_phase": ("ctgov.studies",),
    "recruiting_in_phase": ("ctgov.studies",),
    "median_enrollment_by_phase": ("ctgov.studies",),
    "lead_sponsor_rank": ("ctgov.sponsors",),
    "registrations_running_total": ("ctgov.studies",),
    "largest_trials_per_country_lateral": ("ctgov.countries", "ctgov.studies"),
    "monthly_starts_with_gaps": ("ctgov.studies",),
    "latest_trial_per_lead_sponsor": ("ctgov.sponsors", "ctgov.studies"),
    "results_rate_by_completion_year": ("ctgov.studies", "ctgov.calculated_values"),
    "sites_per_country": ("ctgov.facilities",),
    "enrollment_histogram": ("ctgov.studies",),
    "condition_search": ("ctgov.conditions",),
    "intervention_types_by_phase": ("ctgov.interventions", "ctgov.studies"),
    "sponsor_roles_union": ("ctgov.sponsors",),
    "us_sites_without_results_except": ("ctgov.calculated_values",),
    "recruiting_in_country_exists": ("ctgov.studies", "ctgov.facilities"),
    "months_to_report_by_agency_class": ("ctgov.calculated_values", "ctgov.sponsors"),
    "status_counts_as_json": ("ctgov.studies",),
    "countries_per_trial": ("ctgov.studies", "ctgov.countries"),
    "enrollment_quartiles_ntile": ("ctgov.studies",),
    "minimum_age_bands": ("ctgov.calculated_values", "ctgov.eligibilities"),
    "design_masking_by_allocation": ("ctgov.designs",),
    "started_between_years": ("ctgov.studies",),
    "phase_order_from_values": ("ctgov.studies",),
    "median_duration_months": ("ctgov.studies",),
    "serious_adverse_event_terms": ("ctgov.reported_events",),
    "mesh_terms_recursive_levels": ("ctgov.browse_conditions",),
    "schema_columns": ("information_schema.columns",),
    "unqualified_tables_with_keyword_names": ("ctgov.studies", "ctgov.keywords"),
}


def test_sqlguard_examples_have_expected_tables() -> None:
    assert [ident for ident, _, _ in EXAMPLES] == list(EXPECTED_TABLES)
    assert len(EXAMPLES) >= 20


@pytest.mark.parametrize(("ident", "sql", "params"), EXAMPLES, ids=[case[0] for case in EXAMPLES])
def test_sqlguard_accepts_analytical_query(ident: str, sql: str, params: dict[str, object]) -> None:
    guarded = check_query(sql)
    assert guarded.parameters == tuple(params)
    assert guarded.tables == EXPECTED_TABLES[ident]
    assert guarded.bind(params) == tuple(params.values())
    assert guarded.sql == guarded.sql.strip() and not guarded.sql.endswith(";")
    assert not any(f":{name}" in guarded.sql for name in params)
    assert all(f"${position}" in guarded.sql for position in range(1, len(params) + 1))
    # What the guard hands on passes the guard again unchanged (no :name left to rewrite).
    if not params:
        assert check_query(guarded.sql) == guarded


def test_sqlguard_rewrites_parameters_to_positional() -> None:
    sql = (
        "-- recruiting trials\n"
        "SELECT nct_id FROM ctgov.studies\n"
        "WHERE phase = :phase AND overall_status = :status OR phase = :phase;  -- done\n"
    )
    assert check_query(sql) == GuardedQuery(
        sql="SELECT nct_id FROM ctgov.studies\nWHERE phase = $1 AND overall_status = $2 OR phase = $1",
        parameters=("phase", "status"),
        tables=("ctgov.studies",),
    )


def test_sqlguard_leaves_colons_outside_parameters_alone() -> None:
    sql = (
        "SELECT ':x' AS \"a:b\", $$ :y $$, e'\\':z', nct_id::text, a[1:n], a[lo:hi], a[:n], "
        "json_object('k': :val) /* :c */ FROM t -- :d\nWHERE c = :real"
    )
    guarded = check_query(sql)
    assert guarded == GuardedQuery(
        sql=(
            "SELECT ':x' AS \"a:b\", $$ :y $$, e'\\':z', nct_id::text, a[1:n], a[lo:hi], a[:n], "
            "json_object('k': $1) /* :c */ FROM t -- :d\nWHERE c = $2"
        ),
        parameters=("val", "real"),
        tables=("ctgov.t",),
        unqualified=(guarded.sql.index(" t -- ") + 1,),
    )


def test_sqlguard_parameters_inside_array_constructor() -> None:
    guarded = check_query("SELECT * FROM ctgov.studies WHERE phase = ANY(ARRAY[:first, :second]) LIMIT :n")
    assert guarded.sql == "SELECT * FROM ctgov.studies WHERE phase = ANY(ARRAY[$1, $2]) LIMIT $3"
    assert guarded.parameters == ("first", "second", "n")


def test_sqlguard_bind_orders_values_and_names_missing_ones() -> None:
    guarded = check_query("SELECT * FROM ctgov.studies WHERE phase = :phase AND enrollment > :size")
    assert guarded.bind({"size": 100, "phase": "PHASE2", "unused": 1}) == ("PHASE2", 100)
    with pytest.raises(BadInput, match=r"Give a value for :size before running the query\."):
        guarded.bind({"phase": "PHASE2"})


def test_sqlguard_tables_follow_cte_scope() -> None:
    # Without RECURSIVE, the first CTE cannot see the second, so its `b` is a table.
    forward = check_query("WITH a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a, b")
    assert forward.tables == ("ctgov.b",)
    recursive = check_query(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) "
        "SELECT * FROM r JOIN ctgov.studies s ON s.enrollment = r.n"
    )
    assert recursive.tables == ("ctgov.studies",)
    nested = check_query("WITH a AS (SELECT 1) SELECT * FROM (WITH c AS (SELECT * FROM a) SELECT * FROM c, studies) x")
    assert nested.tables == ("ctgov.studies",)


def test_sqlguard_default_schema_qualifies_bare_names() -> None:
    guarded = check_query("SELECT * FROM studies JOIN public.notes USING (nct_id)", default_schema="aact")
    assert guarded.tables == ("aact.studies", "public.notes")


def test_sqlguard_size_limit_is_inclusive() -> None:
    body = "SELECT 1"
    assert check_query(body + " " * (MAX_CHARS - len(body))).sql == body
    with pytest.raises(UnsafeQuery, match="100,001 characters long"):
        check_query(body + " " * (MAX_CHARS + 1 - len(body)))
    with pytest.raises(UnsafeQuery, match="over the limit of 10"):
        check_query("SELECT 12345", max_chars=10)


def test_sqlguard_grammar_functions_and_extensions_pass() -> None:
    sql = (
        "SELECT extract(year FROM start_date), substring(brief_title FROM 1 FOR 20), trim(both ' ' FROM source), "
        "position('a' IN brief_title), start_date AT TIME ZONE 'UTC', brief_title SIMILAR TO '%x%', "
        "coalesce(phase, 'NA'), nullif(phase, ''), greatest(enrollment, 0), least(enrollment, 10), "
        "similarity(brief_title, 'asthma'), public.word_similarity('a', brief_title), pg_catalog.lower(phase), "
        "jsonb_build_object('phase', phase), cardinality(ARRAY[1]), md5(nct_id), current_date, now() "
        "FROM ctgov.studies TABLESAMPLE BERNOULLI (10)"
    )
    assert check_query(sql).tables == ("ctgov.studies",)


def test_sqlguard_built_in_operators_pass_wherever_an_operator_is_named() -> None:
    sql = (
        "SELECT nct_id FROM ctgov.studies WHERE nct_id = ANY (SELECT nct_id FROM ctgov.sponsors) "
        "AND 1 OPERATOR(pg_catalog.=) ANY (SELECT 1) AND enrollment OPERATOR(pg_catalog.>) 0 "
        "ORDER BY nct_id USING OPERATOR(pg_catalog.<), enrollment USING >"
    )
    assert check_query(sql).tables == ("ctgov.studies", "ctgov.sponsors")


def test_sqlguard_survives_deep_input_on_a_small_caller_stack() -> None:
    # The parse runs on the guard's own large stack, so a caller's small thread stack is no risk.
    chain = "SELECT " + "+".join(["1"] * 30_000)
    outcome: list[str] = []

    def call() -> None:
        try:
            check_query(chain)
            outcome.append("accepted")
        except UnsafeQuery as exc:
            outcome.append(str(exc))

    previous = threading.stack_size(512 * 1024)
    try:
        worker = threading.Thread(target=call)
        worker.start()
    finally:
        threading.stack_size(previous)
    worker.join()
    assert outcome == [
        "The query is nested too deeply for the parser; flatten it, for example with a WITH clause "
        "or fewer chained operators."
    ]


def test_sqlguard_concurrent_checks_agree() -> None:
    sql, params = EXAMPLES[1][1], EXAMPLES[1][2]
    results: list[GuardedQuery] = []
    workers = [threading.Thread(target=lambda: results.append(check_query(sql))) for _ in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(results) == 8
    assert set(results) == {check_query(sql)}
    assert results[0].parameters == tuple(params)


def _example_files() -> list[Path]:
    return sorted(EXAMPLES_DIR.glob("*.sql"))


def test_sqlguard_example_files_exist() -> None:
    assert len(_example_files()) == 10


@pytest.mark.parametrize("path", _example_files(), ids=lambda path: path.stem)
def test_sqlguard_accepts_example_file(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    first_line = text.splitlines()[0]
    assert re.fullmatch(r"-- \S.*\S", first_line), first_line
    guarded = check_query(text)
    assert guarded.tables and all(table.startswith("ctgov.") for table in guarded.tables)
    assert set(guarded.parameters) <= {"country"}


def test_sqlguard_refuses_more_parameters_than_the_console_takes():
    # A 100,000-character query can name ~14,000 :parameters: the guard took seconds numbering them (each new name
    # was looked up in a list) and bind() listed every missing one in its message. The console takes 40.
    names = [f"p{i}" for i in range(12_000)]
    sql = "SELECT " + ", ".join(f":{n}" for n in names)
    with pytest.raises(UnsafeQuery, match=r"^This query names 12,000 parameters; the console takes at most 40\.$"):
        sqlguard.check_query(sql)
    at_limit = sqlguard.check_query("SELECT " + ", ".join(f":{n}, :{n}" for n in names[:sqlguard.MAX_PARAMETERS]))
    assert at_limit.parameters == tuple(names[:40])
    assert at_limit.sql.endswith("$39, $40, $40")


def test_sqlguard_qualifies_bare_relation_names_as_it_reads_them() -> None:
    guarded = check_query(
        'WITH w AS (SELECT 1 FROM studies) SELECT * FROM w, ONLY "Odd" o, (TABLE sponsors) s, public.x, '
        "LATERAL (WITH sponsors AS (SELECT 2) SELECT * FROM sponsors) l WHERE 'studies' = :p"
    )
    assert guarded.tables == ("ctgov.studies", 'ctgov.Odd', "ctgov.sponsors", "public.x")
    assert guarded.qualified("ctgov") == (
        'WITH w AS (SELECT 1 FROM ctgov.studies) SELECT * FROM w, ONLY ctgov."Odd" o, (TABLE ctgov.sponsors) s, '
        "public.x, LATERAL (WITH sponsors AS (SELECT 2) SELECT * FROM sponsors) l WHERE 'studies' = $1"
    )
    assert check_query("SELECT 1").qualified("ctgov") == "SELECT 1"


def test_sqlguard_a_parse_error_quotes_at_most_80_characters_of_the_token() -> None:
    # The parser's "at or near" repeated the whole offending token: thousands of characters for a long ?sql=.
    for sql, token in (("SELECT 1,\n'" + "b" * 4000, "'" + "b" * 79), ('SELECT "' + "q" * 3000, '"' + "q" * 79)):
        with pytest.raises(UnsafeQuery) as caught:
            check_query(sql)
        message = str(caught.value)
        assert f'at or near "{token}…".' in message and len(message) < 200, message
        assert f"(line {sql.count(chr(10)) + 1})" in message, message
    with pytest.raises(UnsafeQuery) as caught:
        check_query("SELECT nct_id FROM ctgov.studies WHERE )")
    assert 'at or near ")".' in str(caught.value)
