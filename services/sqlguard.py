"""Guard for the read-only SQL console: accept exactly one SELECT, checked by PostgreSQL's own parser.

The guard works on PostgreSQL's own lexer tokens and parse tree (pglast), never on regular
expressions over the text, so string literals, quoted identifiers, dollar quotes and comments are
read exactly as the server will read them. It is one layer of three: the database layer still runs
the query inside a READ ONLY transaction, with a statement timeout and a row cap, as a role that
cannot write. It assumes the server's default `standard_conforming_strings = on`, the reading
pglast uses; the database layer must keep that setting on so server and guard see the same literals.

Bound parameters are written `:name`. The guard rewrites them to PostgreSQL's positional `$1`,
`$2`… before parsing, so the text it checks is byte for byte the text that runs: execute
`GuardedQuery.sql` with positional binding (`GuardedQuery.bind`), not through a second rewriter
such as SQLAlchemy's `text()`, which would re-read colons inside string literals.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, TypeVar

import pglast
from pglast import ast
from pglast.enums.lockoptions import LockClauseStrength
from pglast.enums.parsenodes import TransactionStmtKind, VariableSetKind

from services.errors import BadInput, UnsafeQuery

MAX_CHARS = 100_000
MAX_PARAMETERS = 40  # one input box each on the SQL page; 100,000 characters could name ~12,000
DEFAULT_SCHEMA = "ctgov"

# Brackets deeper than this are refused before parsing: no analytical query needs them, and
# PostgreSQL's grammar gives up ("memory exhausted") at about 10,000 levels anyway.
MAX_NESTING = 200
# Parse-tree depth limit. Long chains of operators or UNIONs build deep trees without any
# brackets; the server would stop them with "stack depth limit exceeded", the guard earlier.
MAX_TREE_DEPTH = 1_000
# pglast turns the C parse tree into Python objects recursively in C, and a left-deep chain of
# about 25,000 operators (50 kB of text) overflows an 8 MB stack: a segmentation fault no
# `except` can catch. Parsing therefore runs in a thread whose stack grows with the input:
# about 330 bytes are needed per level and a level takes at least two characters.
_STACK_BYTES_PER_CHAR = 512
_MIN_STACK_BYTES = 16 * 1024 * 1024
_MAX_STACK_BYTES = 1024 * 1024 * 1024
_STACK_GRANULE = 1024 * 1024

EMPTY_MESSAGE = "Type a SELECT query."
_TOO_DEEP = (
    "The query is nested too deeply for the parser; flatten it, for example with a WITH "
    "clause or fewer chained operators."
)
_ONLY_SELECT = "only a single SELECT query can run here"

_COMMENT_TOKENS = frozenset({"SQL_COMMENT", "C_COMMENT"})
_LITERAL_TOKENS = frozenset({"SCONST", "USCONST", "BCONST", "XCONST"})
# Tokens that end an operand: a colon glued to one of them is an array-slice bound (`a[1:n]`),
# not a parameter, the same reading SQLAlchemy's `text()` gives.
_OPERAND_TOKENS = frozenset(
    {"IDENT", "UIDENT", "ICONST", "FCONST", "SCONST", "USCONST", "BCONST", "XCONST", "PARAM",
     "ASCII_41", "ASCII_93"}
)
_PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")
_SURROGATES = re.compile(r"[\ud800-\udfff]")
_ERROR_INDEX = re.compile(r",? at index (\d+)\s*\Z")
_NEAR_TOKEN = re.compile(r'at or near "(.*)"', re.DOTALL)
_MAX_QUOTED = 80  # characters of the offending token an error message repeats

# Functions a researcher needs for analysis and that only compute a value from their arguments:
# no side effects, no file or network access, no SQL given as text, no view of other sessions.
# Grammar forms such as EXTRACT, SUBSTRING … FROM, TRIM, OVERLAY, AT TIME ZONE, IS NORMALIZED,
# OVERLAPS, SIMILAR TO, COLLATION FOR and TREAT reach the tree as pg_catalog calls listed here.
ALLOWED_FUNCTIONS = frozenset(
    {
        # aggregates
        "count", "sum", "avg", "min", "max", "array_agg", "string_agg", "bool_and", "bool_or",
        "every", "bit_and", "bit_or", "bit_xor", "any_value", "json_agg", "jsonb_agg",
        "json_agg_strict", "jsonb_agg_strict", "json_object_agg", "jsonb_object_agg",
        "json_object_agg_strict", "jsonb_object_agg_strict", "json_object_agg_unique",
        "jsonb_object_agg_unique", "json_object_agg_unique_strict",
        "jsonb_object_agg_unique_strict", "range_agg", "range_intersect_agg", "xmlagg",
        "stddev", "stddev_pop", "stddev_samp", "variance", "var_pop", "var_samp", "corr",
        "covar_pop", "covar_samp", "regr_avgx", "regr_avgy", "regr_count", "regr_intercept",
        "regr_r2", "regr_slope", "regr_sxx", "regr_sxy", "regr_syy", "mode", "percentile_cont",
        "percentile_disc",
        # window functions (rank and friends double as hypothetical-set aggregates)
        "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead",
        "first_value", "last_value", "nth_value",
        # mathematics
        "abs", "cbrt", "ceil", "ceiling", "degrees", "div", "exp", "factorial", "floor", "gcd",
        "lcm", "ln", "log", "log10", "min_scale", "mod", "pi", "power", "pow", "radians", "round",
        "scale", "sign", "sqrt", "trim_scale", "trunc", "width_bucket", "random", "random_normal",
        "acos", "acosd", "asin", "asind", "atan", "atand", "atan2", "atan2d", "cos", "cosd", "cot",
        "cotd", "sin", "sind", "tan", "tand", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
        "erf", "erfc", "gamma", "lgamma",
        # text
        "ascii", "bit_length", "btrim", "casefold", "char_length", "character_length", "chr",
        "concat", "concat_ws", "format", "initcap", "left", "length", "lower", "lpad", "ltrim",
        "md5", "normalize", "is_normalized", "octet_length", "overlay", "position", "quote_ident",
        "quote_literal", "quote_nullable", "regexp_count", "regexp_instr", "regexp_like",
        "regexp_match", "regexp_matches", "regexp_replace", "regexp_split_to_array",
        "regexp_split_to_table", "regexp_substr", "repeat", "replace", "reverse", "right", "rpad",
        "rtrim", "split_part", "starts_with", "string_to_array", "string_to_table", "strpos",
        "substr", "substring", "similar_to_escape", "to_ascii", "to_hex", "to_bin", "to_oct",
        "translate", "unistr", "upper", "sha224", "sha256", "sha384", "sha512", "encode",
        "decode", "convert", "convert_from", "convert_to", "crc32", "crc32c",
        # extensions shipped with AACT-style installs: pg_trgm, fuzzystrmatch, unaccent, earthdistance
        "similarity", "word_similarity", "strict_word_similarity", "show_trgm", "levenshtein",
        "levenshtein_less_equal", "soundex", "difference", "metaphone", "dmetaphone",
        "dmetaphone_alt", "unaccent", "earth_distance", "ll_to_earth", "earth_box",
        "latitude", "longitude",
        # dates and times
        "age", "clock_timestamp", "date_add", "date_bin", "date_part", "date_subtract",
        "date_trunc", "extract", "isfinite", "justify_days", "justify_hours", "justify_interval",
        "make_date", "make_interval", "make_time", "make_timestamp", "make_timestamptz", "now",
        "statement_timestamp", "timeofday", "transaction_timestamp", "to_char", "to_date",
        "to_number", "to_timestamp", "timezone", "overlaps",
        # JSON
        "to_json", "to_jsonb", "array_to_json", "row_to_json", "json_build_array",
        "jsonb_build_array", "json_build_object", "jsonb_build_object", "json_object",
        "jsonb_object", "json_array_elements", "json_array_elements_text", "jsonb_array_elements",
        "jsonb_array_elements_text", "json_array_length", "jsonb_array_length", "json_each",
        "json_each_text", "jsonb_each", "jsonb_each_text", "json_extract_path",
        "json_extract_path_text", "jsonb_extract_path", "jsonb_extract_path_text",
        "json_object_keys", "jsonb_object_keys", "json_populate_record", "jsonb_populate_record",
        "jsonb_populate_record_valid", "json_populate_recordset", "jsonb_populate_recordset",
        "json_to_record", "jsonb_to_record", "json_to_recordset", "jsonb_to_recordset",
        "json_strip_nulls", "jsonb_strip_nulls", "jsonb_set", "jsonb_set_lax", "jsonb_insert",
        "jsonb_path_exists", "jsonb_path_match", "jsonb_path_query", "jsonb_path_query_array",
        "jsonb_path_query_first", "jsonb_path_exists_tz", "jsonb_path_match_tz",
        "jsonb_path_query_tz", "jsonb_path_query_array_tz", "jsonb_path_query_first_tz",
        "jsonb_pretty", "json_typeof", "jsonb_typeof",
        # arrays and set-returning helpers
        "array_append", "array_cat", "array_dims", "array_fill", "array_length", "array_lower",
        "array_ndims", "array_position", "array_positions", "array_prepend", "array_remove",
        "array_replace", "array_reverse", "array_sample", "array_shuffle", "array_sort",
        "array_to_string", "array_upper", "cardinality", "trim_array", "unnest",
        "generate_series", "generate_subscripts",
        # ranges
        "int4range", "int8range", "numrange", "daterange", "tsrange", "tstzrange", "isempty",
        "lower_inc", "upper_inc", "lower_inf", "upper_inf", "range_merge",
        # full-text search (ts_stat and ts_rewrite are left out: they run SQL given as text)
        "to_tsvector", "to_tsquery", "plainto_tsquery", "phraseto_tsquery",
        "websearch_to_tsquery", "ts_rank", "ts_rank_cd", "ts_headline", "setweight", "strip",
        "numnode", "querytree", "tsvector_to_array", "array_to_tsvector", "ts_delete", "ts_filter",
        # XML reading
        "xpath", "xpath_exists", "xmlexists", "xml_is_well_formed", "xml_is_well_formed_document",
        "xml_is_well_formed_content", "xmlcomment", "xmltext",
        # conditionals, conversions and casts written as calls
        "num_nonnulls", "num_nulls", "text", "varchar", "bpchar", "bool", "int2", "int4", "int8",
        "float4", "float8", "numeric", "date", "time", "timestamp", "timestamptz", "interval",
        "gen_random_uuid", "uuidv4", "uuidv7", "system_user",
        # the few pg_ functions that only describe a value
        "pg_typeof", "pg_collation_for", "pg_size_pretty",
        # AACT's helper functions in schema ctgov (plain SQL over the trial tables, sql/schema/004_ctgov_views.sql)
        "ids_for_term", "ids_for_org", "classic_spelling",
    }
)

# Refused functions with a reason of their own, checked before the allow-list so that the message
# says what the function would have done. Patterns are fnmatch patterns that end in `*` for a prefix.
_DENIED_FUNCTIONS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("pg_sleep*",), "pauses the server process and would hold a shared connection idle"),
    (
        ("pg_read_file", "pg_read_binary_file", "pg_ls_*", "pg_stat_file", "pg_file_*",
         "pg_logdir_ls", "lo_*", "loread", "lowrite"),
        "reads or writes files on the database server",
    ),
    (("set_config",), "changes server settings"),
    (
        ("current_setting", "pg_settings_get_flags"),
        "reads server settings, which can reveal file paths and limits of the deployment",
    ),
    (("pg_advisory_*", "pg_try_advisory_*"), "takes advisory locks that other sessions would wait on"),
    (
        ("pg_terminate_backend", "pg_cancel_backend", "pg_signal_backend", "pg_reload_conf",
         "pg_rotate_logfile", "pg_log_backend_memory_contexts", "pg_promote"),
        "signals server processes or other sessions",
    ),
    (("dblink*", "postgres_fdw_*"), "connects to other databases"),
    (
        ("query_to_xml*", "query_to_xmlschema", "cursor_to_xml*", "table_to_xml*",
         "schema_to_xml*", "database_to_xml*", "ts_stat", "ts_rewrite"),
        "runs SQL or reads tables named in a text argument, out of the guard's sight",
    ),
    (("nextval", "setval", "currval", "lastval"), "changes or reads sequence state"),
    (("txid_*", "pg_current_xact_id*", "pg_snapshot_*"), "assigns or inspects transaction IDs"),
    (("pg_notify",), "sends notifications to other sessions"),
    (("pg_*",), "is a PostgreSQL administration function"),
)

# Schemas a function may be qualified with: built-ins live in pg_catalog, the allowed extension
# functions (pg_trgm, fuzzystrmatch, unaccent) in public, AACT's helpers (ids_for_term …) in ctgov.
_FUNCTION_SCHEMAS = frozenset({"pg_catalog", "public", "ctgov"})

# Relations are refused when they live in a system schema, or when their name starts with pg_
# and no schema is given (such names resolve to pg_catalog). The system catalogs and views
# expose other sessions' queries and addresses (pg_stat_activity, pg_locks), role and password
# data (pg_authid, pg_shadow, pg_user_mappings) and server settings (pg_settings,
# pg_file_settings, pg_hba_file_rules); a console for trial data needs none of them.
# information_schema stays open: PostgreSQL filters it to what the role may see, and its
# `columns` view is how a researcher finds the AACT column names.
_SYSTEM_SCHEMAS = frozenset({"pg_catalog", "pg_toast"})
_SYSTEM_SCHEMA_PREFIXES = ("pg_temp", "pg_toast_temp")

_TABLESAMPLE_METHODS = frozenset({"bernoulli", "system"})
_OPERATOR_SCHEMAS = frozenset({"pg_catalog", "public"})
# Where a SELECT names an operator, possibly schema-qualified: in an expression (A_Expr), before ANY/ALL
# over a subquery (SubLink) and after ORDER BY … USING (SortBy).
_OPERATOR_FIELDS = {ast.A_Expr: "name", ast.SubLink: "operName", ast.SortBy: "useOp"}

_LOCK_CLAUSES = {
    LockClauseStrength.LCS_FORKEYSHARE: "FOR KEY SHARE",
    LockClauseStrength.LCS_FORSHARE: "FOR SHARE",
    LockClauseStrength.LCS_FORNOKEYUPDATE: "FOR NO KEY UPDATE",
    LockClauseStrength.LCS_FORUPDATE: "FOR UPDATE",
}

_DATA_CHANGES = {
    "InsertStmt": ("INSERT", "adds rows"),
    "UpdateStmt": ("UPDATE", "changes rows"),
    "DeleteStmt": ("DELETE", "removes rows"),
    "MergeStmt": ("MERGE", "changes rows"),
}

_SESSION = "the console runs every query in its own read-only session and transaction"
_MAINTENANCE = "it is database maintenance"
_SCHEMA_CHANGE = "it changes the database's schema, permissions or documentation"

# Statement kinds other than SELECT: (keyword shown to the user or None for the statement's
# first word, why it is refused). The guard refuses EXPLAIN too (_statement_refusal); the console
# takes a leading EXPLAIN off first (sqlcompat.split_explain) and gives the guard only the query inside.
_STATEMENTS: dict[str, tuple[str | None, str]] = {
    "TruncateStmt": ("TRUNCATE", "it empties tables"),
    "CopyStmt": ("COPY", "it moves bulk data to or from files and programs"),
    "VariableShowStmt": ("SHOW", "it reveals server settings"),
    "PrepareStmt": ("PREPARE", "the console prepares statements itself; write bound parameters as :name"),
    "ExecuteStmt": ("EXECUTE", "the console prepares statements itself; write bound parameters as :name"),
    "DeallocateStmt": ("DEALLOCATE", "the console prepares statements itself"),
    "DoStmt": ("DO", "it runs procedural code"),
    "CallStmt": ("CALL", "it runs a stored procedure"),
    "ListenStmt": ("LISTEN", "it waits for messages from other sessions"),
    "UnlistenStmt": ("UNLISTEN", "it manages messages from other sessions"),
    "NotifyStmt": ("NOTIFY", "it sends messages to other sessions"),
    "LockStmt": ("LOCK", "it locks tables that other sessions use"),
    "ClusterStmt": ("CLUSTER", _MAINTENANCE),
    "ReindexStmt": ("REINDEX", _MAINTENANCE),
    "CheckPointStmt": ("CHECKPOINT", _MAINTENANCE),
    "RefreshMatViewStmt": ("REFRESH MATERIALIZED VIEW", _MAINTENANCE),
    "DeclareCursorStmt": ("DECLARE", "the console fetches rows itself"),
    "FetchStmt": (None, "the console fetches rows itself"),
    "ClosePortalStmt": ("CLOSE", "the console fetches rows itself"),
    "DiscardStmt": ("DISCARD", _SESSION),
    "LoadStmt": ("LOAD", "it loads code into the server"),
    "AlterSystemStmt": ("ALTER SYSTEM", "it changes the server's configuration"),
    "CreateTableAsStmt": (None, "it creates a table"),
    "CommentStmt": ("COMMENT", _SCHEMA_CHANGE),
}

T = TypeVar("T")


class TooManyParameters(UnsafeQuery):
    """The query names more than MAX_PARAMETERS `:parameters` (the SQL page says so before it is run)."""


@dataclass(frozen=True)
class GuardedQuery:
    """A single read-only SELECT that passed the guard.

    `sql` is the statement as typed, without surrounding comments and the trailing semicolon,
    with every `:name` replaced by a positional `$n`; `parameters[n - 1]` is the name behind `$n`.
    `tables` lists the relations read, schema-qualified, in order of first appearance; a relation named
    without a schema (and not a WITH query) is listed in the default schema, and its offset in `sql` is in
    `unqualified`: the server would look it up through its search_path, so run `qualified(default schema)`.
    """

    sql: str
    parameters: tuple[str, ...]
    tables: tuple[str, ...]
    unqualified: tuple[int, ...] = ()

    def qualified(self, schema: str) -> str:
        """`sql` with `schema.` written before every relation named without a schema."""
        pieces, cursor = [], 0
        for offset in self.unqualified:
            pieces += [self.sql[cursor:offset], f"{schema}."]
            cursor = offset
        return "".join(pieces) + self.sql[cursor:]

    def bind(self, values: Mapping[str, Any]) -> tuple[Any, ...]:
        """Order `values` by `parameters` for positional binding; names the query lacks are ignored."""
        missing = [name for name in self.parameters if name not in values]
        if missing:
            listed = ", ".join(f":{name}" for name in missing)
            raise BadInput(f"Give a value for {listed} before running the query.")
        return tuple(values[name] for name in self.parameters)


def check_query(
    sql: str, *, max_chars: int = MAX_CHARS, default_schema: str = DEFAULT_SCHEMA
) -> GuardedQuery:
    """Accept one read-only SELECT or raise UnsafeQuery with a one-sentence reason."""
    if not isinstance(sql, str) or not sql.strip():
        raise UnsafeQuery(EMPTY_MESSAGE)
    if len(sql) > max_chars:
        raise UnsafeQuery(
            f"The query is {len(sql):,} characters long, over the limit of {max_chars:,}; shorten it."
        )
    _check_characters(sql)
    tokens = [token for token in _scan(sql) if token.name not in _COMMENT_TOKENS]
    statement = _single_statement(tokens)
    if not statement:
        raise UnsafeQuery(EMPTY_MESSAGE)
    _check_lookalikes(sql, statement)
    _check_nesting(statement)
    text, parameters = _positional(sql, statement)
    stack = min(max(len(text) * _STACK_BYTES_PER_CHAR, _MIN_STACK_BYTES), _MAX_STACK_BYTES)
    stack += -stack % _STACK_GRANULE  # some platforms take only whole pages
    tables, unqualified = _with_stack(stack, lambda: _analyse(text, default_schema))
    return GuardedQuery(sql=text, parameters=parameters, tables=tables, unqualified=unqualified)


def _check_characters(sql: str) -> None:
    """Refuse characters the parser and the server could read differently."""
    if _SURROGATES.search(sql):
        raise UnsafeQuery("The query contains broken Unicode characters; retype or re-paste it.")
    control = _CONTROL_CHARS.search(sql)
    if control:
        # libpg_query reads a C string, so text after a NUL would be invisible to the guard.
        code = f"U+{ord(control.group()):04X}"
        raise UnsafeQuery(f"The query contains the control character {code}; remove it and try again.")


def _scan(sql: str) -> list[Any]:
    """PostgreSQL's lexer tokens for `sql`, or UnsafeQuery with the lexer's complaint."""
    try:
        return list(pglast.parser.scan(sql))
    except pglast.Error as exc:
        # A look-alike character where the lexer stopped explains more than the lexer's words.
        location = _error_location(exc)
        if location is not None:
            for char in re.split(r"[ \t\r\n\f]", sql[location:], maxsplit=1)[0]:
                _check_lookalike(char)
        raise UnsafeQuery(_parse_message(exc, sql)) from None


def _single_statement(tokens: Sequence[Any]) -> list[Any]:
    """Tokens of the only statement, without semicolons; refuse a second statement."""
    statements: list[list[Any]] = [[]]
    for token in tokens:
        if token.name == "ASCII_59":
            statements.append([])
        else:
            statements[-1].append(token)
    filled = [statement for statement in statements if statement]
    if len(filled) > 1:
        raise UnsafeQuery(
            f"The text holds {len(filled)} statements separated by semicolons; run one SELECT at a time."
        )
    return filled[0] if filled else []


def _check_lookalikes(sql: str, tokens: Sequence[Any]) -> None:
    """Refuse non-ASCII look-alikes of SQL punctuation or keywords outside quotes."""
    for token in tokens:
        text = sql[token.start : token.end + 1]
        if token.name in _LITERAL_TOKENS or text.startswith('"') or text[:3].upper() == 'U&"':
            continue
        for char in text:
            _check_lookalike(char)


def _check_lookalike(char: str) -> None:
    """Refuse one non-ASCII character that imitates ASCII, a space or nothing at all."""
    if char.isascii():
        return
    folded = unicodedata.normalize("NFKC", char)
    if folded == char and unicodedata.category(char)[0] not in "CZ":
        return
    if unicodedata.category(char)[0] == "C" or not folded.strip() and not folded.isspace():
        shown = "an invisible character"
    elif folded.isspace():
        shown = "a look-alike of a space"
    else:
        shown = f"a look-alike of {folded.strip()!r}"
    name = unicodedata.name(char, "unnamed character")
    raise UnsafeQuery(
        f"The query contains U+{ord(char):04X} ({name}) outside quotes, {shown}; retype it in plain ASCII."
    )


def _check_nesting(tokens: Sequence[Any]) -> None:
    """Refuse brackets nested deeper than MAX_NESTING before the parser sees them."""
    depth = deepest = 0
    for token in tokens:
        if token.name in ("ASCII_40", "ASCII_91"):
            depth += 1
            deepest = max(deepest, depth)
        elif token.name in ("ASCII_41", "ASCII_93"):
            depth -= 1
    if deepest > MAX_NESTING:
        raise UnsafeQuery(
            f"The query nests brackets {deepest:,} levels deep, over the limit of {MAX_NESTING}; "
            "flatten it, for example with a WITH clause."
        )


def _positional(sql: str, tokens: Sequence[Any]) -> tuple[str, tuple[str, ...]]:
    """The statement's text with each `:name` turned into `$n`, and the names in order."""
    names: dict[str, int] = {}  # name -> n, in order of first use
    pieces: list[str] = []
    cursor = tokens[0].start
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.name == "PARAM":
            raise UnsafeQuery("Write bound parameters as :name; positional parameters such as $1 are not accepted.")
        if token.name == "ASCII_58" and index + 1 < len(tokens):
            follower = tokens[index + 1]
            glued_after = follower.start == token.end + 1
            previous = tokens[index - 1] if index else None
            glued_before = (
                previous is not None
                and previous.end + 1 == token.start
                and (previous.name in _OPERAND_TOKENS or previous.kind != "NO_KEYWORD")
            )
            # `a[:n]` is a slice with no lower bound; `ARRAY[:n]` holds a parameter.
            opens_slice = previous is not None and previous.name == "ASCII_91" and _is_subscript(tokens, index - 1)
            follower_text = sql[follower.start : follower.end + 1]
            if glued_after and not glued_before and not opens_slice:
                if _PARAM_NAME.match(follower_text):
                    number = names.setdefault(follower_text, len(names) + 1)
                    pieces += [sql[cursor : token.start], f"${number}"]
                    cursor = follower.end + 1
                    index += 2
                    continue
                if follower.name in _LITERAL_TOKENS or follower_text.startswith('"'):
                    raise UnsafeQuery(
                        f"Write bound parameters as :name with letters, digits and underscores, not :{follower_text}."
                    )
        index += 1
    if len(names) > MAX_PARAMETERS:
        raise TooManyParameters(f"This query names {len(names):,} parameters; the console takes at most {MAX_PARAMETERS}.")
    pieces.append(sql[cursor : tokens[-1].end + 1])
    return "".join(pieces), tuple(names)


def _is_subscript(tokens: Sequence[Any], bracket: int) -> bool:
    """Whether the `[` at `bracket` subscripts a value rather than opening an ARRAY[...] list."""
    if bracket == 0:
        return False
    before = tokens[bracket - 1]
    if before.name in ("IDENT", "UIDENT", "PARAM", "ASCII_41", "ASCII_93"):
        return True
    return before.kind in ("UNRESERVED_KEYWORD", "COL_NAME_KEYWORD")


def _with_stack(stack_bytes: int, work: Callable[[], T]) -> T:
    """Run `work` in a thread with a stack of `stack_bytes` and return or raise its outcome."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # handed back to the caller's thread just below
            outcome["error"] = exc

    # threading.stack_size is process-wide: set it only for the moment this thread is created.
    with _STACK_LOCK:
        previous = threading.stack_size(stack_bytes)
        try:
            worker = threading.Thread(target=target, name="sqlguard-parse", daemon=True)
            worker.start()
        finally:
            threading.stack_size(previous)
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


_STACK_LOCK = threading.Lock()


def _analyse(text: str, default_schema: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Parse `text`, check it is one safe SELECT, and return the relations it reads and the offsets of those
    named without a schema."""
    try:
        statements = pglast.parse_sql(text)
    except pglast.Error as exc:
        raise UnsafeQuery(_parse_message(exc, text)) from None
    except RecursionError:
        raise UnsafeQuery(_TOO_DEEP) from None
    if len(statements) != 1:
        raise UnsafeQuery(EMPTY_MESSAGE if not statements else "Run one SELECT at a time.")
    statement = statements[0].stmt
    if not isinstance(statement, ast.SelectStmt):
        raise UnsafeQuery(_statement_refusal(statement, text))
    return _Inspector(default_schema).run(statement)


def _parse_message(exc: Exception, text: str) -> str:
    """One sentence from a lexer or parser error, with the line it points at."""
    message = str(exc.args[0]) if exc.args else str(exc)
    location = _error_location(exc)
    message = _ERROR_INDEX.sub("", message)
    if "memory exhausted" in message or "stack depth" in message:
        return _TOO_DEEP
    # The token PostgreSQL quotes may be the rest of a long query (an unterminated string): quote its start only.
    message = _NEAR_TOKEN.sub(lambda m: f'at or near "{m[1][:_MAX_QUOTED]}…"' if len(m[1]) > _MAX_QUOTED
                              else m[0], message)
    where = f" (line {text.count(chr(10), 0, location) + 1})" if location is not None else ""
    hint = ""
    if 'at or near ":"' in message:
        hint = "; write bound parameters as :name after a space, comma, bracket or operator"
    return f"PostgreSQL cannot parse the query{where}: {message.rstrip('.')}{hint}."


def _error_location(exc: Exception) -> int | None:
    """The character offset a pglast error points at, if it gives one."""
    if len(exc.args) > 1 and isinstance(exc.args[1], int):
        return exc.args[1]
    found = _ERROR_INDEX.search(str(exc.args[0]) if exc.args else str(exc))
    return int(found.group(1)) if found else None


def _statement_refusal(statement: Any, text: str) -> str:
    """Why a statement other than SELECT is refused, naming its kind."""
    kind = type(statement).__name__
    if kind in _DATA_CHANGES:
        label, does = _DATA_CHANGES[kind]
        why = f"it {does}"
    elif kind == "ExplainStmt":
        if any(option.defname == "analyze" and _option_on(option) for option in statement.options or ()):
            label, why = "EXPLAIN ANALYZE", "it executes the statement it explains"
        else:
            label, why = "EXPLAIN", "the console shows results, not plans"
    elif kind == "VariableSetStmt":
        label, why = _set_label(statement), _SESSION
    elif kind == "TransactionStmt":
        label = TransactionStmtKind(statement.kind).name.removeprefix("TRANS_STMT_").replace("_", " ")
        label = {"START": "START TRANSACTION", "PREPARE": "PREPARE TRANSACTION"}.get(label, label)
        why = _SESSION
    elif kind == "VacuumStmt":
        label, why = "VACUUM" if statement.is_vacuumcmd else "ANALYZE", _MAINTENANCE
    elif kind in ("GrantStmt", "GrantRoleStmt"):
        label, why = "GRANT" if statement.is_grant else "REVOKE", "it changes permissions"
    else:
        given, why = _STATEMENTS.get(kind, (None, _SCHEMA_CHANGE))
        label = given or (text.split(None, 1)[0].upper() if text.split() else kind)
    return f"{label} is not allowed because {why}; {_ONLY_SELECT}."


def _option_on(option: Any) -> bool:
    """Whether an EXPLAIN option such as ANALYZE is switched on."""
    if option.arg is None:
        return True
    value = getattr(option.arg, "sval", None) or getattr(option.arg, "ival", None)
    return str(value).lower() not in ("false", "off", "0", "no")


def _set_label(statement: Any) -> str:
    """SET, SET ROLE, SET SESSION AUTHORIZATION, SET TRANSACTION or RESET."""
    if VariableSetKind(statement.kind) in (VariableSetKind.VAR_RESET, VariableSetKind.VAR_RESET_ALL):
        return "RESET"
    return {
        "role": "SET ROLE",
        "session_authorization": "SET SESSION AUTHORIZATION",
        "transaction": "SET TRANSACTION",
        "session characteristics": "SET TRANSACTION",
    }.get((statement.name or "").lower(), "SET")


class _Inspector:
    """Walk a SELECT's parse tree without recursion, refusing unsafe parts and collecting tables."""

    def __init__(self, default_schema: str) -> None:
        self.default_schema = default_schema
        self.tables: dict[str, int] = {}
        self.unqualified: set[int] = set()

    def run(self, root: ast.SelectStmt) -> tuple[tuple[str, ...], tuple[int, ...]]:
        """Check every node under `root`; return the relations read, in text order, and the offsets of the
        relation names written without a schema."""
        stack: list[tuple[Any, frozenset[str], int]] = [(root, frozenset(), 1)]
        while stack:
            node, scope, depth = stack.pop()
            if isinstance(node, tuple):
                stack.extend((item, scope, depth) for item in node)
                continue
            if not isinstance(node, ast.Node):
                continue
            if depth > MAX_TREE_DEPTH:
                raise UnsafeQuery(_TOO_DEEP)
            children = self.visit(node, scope)
            if children is None:
                stack.extend((getattr(node, name), scope, depth + 1) for name in node)
            else:
                stack.extend((child, child_scope, depth + 1) for child, child_scope in children)
        ordered = sorted(self.tables.items(), key=lambda item: item[1])
        return tuple(name for name, _ in ordered), tuple(sorted(self.unqualified))

    def visit(self, node: ast.Node, scope: frozenset[str]) -> list[tuple[Any, frozenset[str]]] | None:
        """Check one node; return its children with their scopes, or None to walk all in `scope`."""
        if isinstance(node, ast.SelectStmt):
            return self.select(node, scope)
        if isinstance(node, (ast.InsertStmt, ast.UpdateStmt, ast.DeleteStmt, ast.MergeStmt)):
            raise UnsafeQuery(_statement_refusal(node, ""))
        if isinstance(node, ast.FuncCall):
            _check_function([part.sval for part in node.funcname or ()])
        elif isinstance(node, ast.RangeVar):
            self.relation(node, scope)
        elif isinstance(node, ast.TypeName):
            _check_type([part.sval or "" for part in node.names or () if isinstance(part, ast.String)])
        elif isinstance(node, ast.RangeTableSample):
            method = (node.method or ())[-1].sval
            if method not in _TABLESAMPLE_METHODS:
                raise UnsafeQuery(f"TABLESAMPLE {method} is not allowed; use TABLESAMPLE BERNOULLI or SYSTEM.")
        elif type(node) in _OPERATOR_FIELDS:
            operator = getattr(node, _OPERATOR_FIELDS[type(node)])
            if isinstance(operator, tuple) and len(operator) > 1:
                schema = operator[0].sval
                if schema not in _OPERATOR_SCHEMAS:
                    raise UnsafeQuery(
                        f"Operators from schema {schema} are not allowed; use the built-in operators."
                    )
        return None

    def select(self, node: ast.SelectStmt, scope: frozenset[str]) -> list[tuple[Any, frozenset[str]]]:
        """Refuse INTO and locking clauses; give CTE bodies and the rest their visible CTE names."""
        if node.intoClause is not None:
            raise UnsafeQuery(
                "SELECT … INTO is not allowed because it creates a table; remove INTO to see the rows."
            )
        if node.lockingClause:
            clause = _LOCK_CLAUSES.get(node.lockingClause[0].strength, "FOR UPDATE")
            raise UnsafeQuery(
                f"{clause} is not allowed because it locks the rows it reads; remove the locking clause."
            )
        children: list[tuple[Any, frozenset[str]]] = []
        inner = scope
        if node.withClause is not None:
            ctes = node.withClause.ctes or ()
            names = [cte.ctename for cte in ctes]
            for position, cte in enumerate(ctes):
                self.cte(cte)
                # Without RECURSIVE a CTE sees only the ones before it, as in PostgreSQL.
                visible = names if node.withClause.recursive else names[:position]
                children.append((cte, scope | frozenset(visible)))
            inner = scope | frozenset(names)
        children.extend((getattr(node, name), inner) for name in node if name != "withClause")
        return children

    @staticmethod
    def cte(cte: ast.CommonTableExpr) -> None:
        """Refuse data-modifying WITH parts and CTE names that would shadow system catalogs."""
        body = cte.ctequery
        if not isinstance(body, ast.SelectStmt):
            label, why = _DATA_CHANGES.get(type(body).__name__, (type(body).__name__, "is not a SELECT"))
            raise UnsafeQuery(
                f'The WITH part "{cte.ctename}" is {"an" if label[:1] in "AEIOU" else "a"} {label}, which {why}; '
                "every part of a WITH must be a SELECT."
            )
        if (cte.ctename or "").startswith("pg_"):
            raise UnsafeQuery(
                f'The WITH name "{cte.ctename}" starts with pg_, which is kept for system catalogs; rename it.'
            )

    def relation(self, node: ast.RangeVar, scope: frozenset[str]) -> None:
        """Refuse system relations and record every other relation under its schema."""
        schema = node.schemaname
        relname = node.relname or ""
        if schema is None and relname in scope:
            return
        if _is_system(schema, relname):
            shown = f"{schema}.{relname}" if schema else relname
            raise UnsafeQuery(
                f"{shown} is a PostgreSQL system relation, which can expose other sessions, roles or "
                "server settings; query the ctgov tables (information_schema.columns lists their columns)."
            )
        parts = [node.catalogname, schema or self.default_schema, relname]
        name = ".".join(part for part in parts if part)
        location = node.location if node.location is not None else 0
        self.tables[name] = min(location, self.tables.get(name, location))
        if schema is None:
            if node.location is None:  # the parser gives every relation its place; without it, nothing to qualify
                raise UnsafeQuery(f"Write {relname} with its schema, as {self.default_schema}.{relname}.")
            self.unqualified.add(node.location)


def _is_system(schema: str | None, name: str) -> bool:
    """Whether a relation or type lives in a system schema, or names one there (a bare pg_ name)."""
    if schema is None:
        return name.startswith("pg_")
    return schema in _SYSTEM_SCHEMAS or schema.startswith(_SYSTEM_SCHEMA_PREFIXES)


def _check_type(parts: list[str]) -> None:
    """Refuse a type in a system schema: every system catalog has a row type of the same name, and a cast to it
    (`null::pg_authid`, `AS x(a pg_shadow)`) shows the catalog's columns. Built-in types named without pg_
    (`pg_catalog.int4`, what `integer` becomes) stay allowed."""
    if not parts:
        return
    schema = parts[-2] if len(parts) > 1 else None
    name = parts[-1].lstrip("_")  # `_pg_authid` is the array type of pg_authid
    if _is_system(schema, name) and (schema != "pg_catalog" or name.startswith("pg_")):
        raise UnsafeQuery(
            f"{'.'.join(parts)} is a PostgreSQL system type, which shows the columns of system catalogs; "
            "cast to the built-in data types (text, integer, date, …)."
        )


def _check_function(parts: list[str]) -> None:
    """Refuse a function call unless it is an allowed built-in, naming why."""
    name = parts[-1]
    shown = ".".join(parts)
    for patterns, why in _DENIED_FUNCTIONS:
        if name not in ALLOWED_FUNCTIONS and any(fnmatchcase(name, pattern) for pattern in patterns):
            raise UnsafeQuery(f"{shown}() is not allowed because it {why}.")
    if len(parts) > 2 or (len(parts) == 2 and parts[0] not in _FUNCTION_SCHEMAS):
        raise UnsafeQuery(
            f"{shown}() is not allowed because only built-in functions may be called; "
            "remove the schema or use a built-in function."
        )
    if name not in ALLOWED_FUNCTIONS:
        raise UnsafeQuery(
            f"{shown}() is not on the list of functions the console allows; use built-in aggregate, "
            "window, math, text, date, JSON and array functions."
        )
