"""SQL console: check a researcher's query with the guard, then run it read-only under a row cap and a time limit.

Three layers stand between console text and the data: the guard (services/sqlguard.py) accepts one
SELECT over the trial schemas; the database door runs it in a READ ONLY transaction with its own
statement timeout, streaming at most `cap` rows; and, where the database allows it, the
transaction switches to the role `trial_reader`, which may only read schema ctgov
(sql/schema/020_reader_role.sql). The page, the CLI and the tests all go through `run_query`.

What a query may take from the database server is bounded too: a small work_mem for each sort and hash,
temp_file_limit for its temporary files (where the database user may set it), and a memory cap that
services/consolewatch.py enforces by measuring the query's server process (where that runs on this machine).
"""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import json
import math
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from services import consolescope, consolewatch, settings
from services.dashboard import export
from services.data import runtime, sqlcompat
from services.data.db import SQL_DIR, Database, load_sql
from services.errors import BadInput, ConsoleBusy, QueryTimeout, QueryTooHeavy, UnsafeQuery
from services.sqlguard import DEFAULT_SCHEMA, GuardedQuery, check_query
from services.sqlguard import MAX_CHARS as MAX_CHARS

DEFAULT_TIMEOUT_MS: int = settings.default("SQL_TIMEOUT_MS")
MAX_ROWS_LIMIT = 1_000_000
DEFAULT_MAX_BYTES: int = settings.default("SQL_MAX_BYTES")
DEFAULT_MAX_VALUE_BYTES: int = settings.default("SQL_MAX_VALUE_BYTES")
# Console queries run on their own small pool: at most this many per process at once (SQL_CONCURRENT), one
# per visitor, so slow console queries can never take the connections the pages need.
DEFAULT_CONCURRENT: int = settings.default("SQL_CONCURRENT")
# What one console query may take from the database server (SQL_MAX_MEMORY_MB, SQL_MAX_TEMP_MB): five at once
# (SQL_CONCURRENT's most) stay within 2.5 GB of memory and 2.5 GB of disk. Each sort or hash gets WORK_MEM (the
# server's default; a server tuned for big reports may have more) and spills to temporary files past it.
DEFAULT_MAX_MEMORY_MB: int = settings.default("SQL_MAX_MEMORY_MB")
DEFAULT_MAX_TEMP_MB: int = settings.default("SQL_MAX_TEMP_MB")
WORK_MEM = "4MB"
MB = 1024 * 1024
# Queries a browser ran itself, as digests (ran_before): its own link runs again at once, another's waits.
RUNS_REMEMBERED = 10_000
BUSY_WAIT_S = 2.0
READER_ROLE = "trial_reader"
# Schemas console queries may name: the trial data, and information_schema for finding columns.
# Schema `app` (assistant sessions, saved views) stays out of reach even where no reader role exists.
READABLE_SCHEMAS = frozenset({"ctgov", "information_schema"})
# What information_schema may describe: the readable schemas except itself (services/consolescope.py).
SCOPE_SCHEMAS = READABLE_SCHEMAS - {consolescope.INFO_SCHEMA}
# ctgov first for bare type names (bare relation names are qualified with ctgov, as the guard reads them);
# public for extension functions and operators (pg_trgm, …).
SEARCH_PATH = "ctgov, public"
EXAMPLES_DIR = SQL_DIR / "examples"

_INTEGER_TYPES = {"int2": "a whole number", "int4": "a whole number", "int8": "a whole number"}
_TEXT_TYPES = frozenset({"text", "varchar", "bpchar", "char", "name", "citext", "unknown"})
_TRUE = frozenset({"true", "t", "yes", "y", "on", "1"})
_FALSE = frozenset({"false", "f", "no", "n", "off", "0"})


@dataclass(frozen=True)
class Limits:
    """The row cap, byte caps, whole-query time limit and concurrency every console query runs under."""

    max_rows: int
    timeout_ms: int
    max_bytes: int = DEFAULT_MAX_BYTES
    max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES
    concurrent: int = DEFAULT_CONCURRENT
    max_memory_mb: int = DEFAULT_MAX_MEMORY_MB
    max_temp_mb: int = DEFAULT_MAX_TEMP_MB

    def describe(self) -> str:
        """One sentence for the page and the CLI."""
        return (f"at most {self.max_rows:,} rows and {_mb(self.max_bytes)} per result, {_mb(self.max_value_bytes)} "
                f"per value, {self.timeout_ms / 1000:g} s per query (the whole query, not each batch); "
                f"one query at a time per visitor, {self.concurrent} per server process; on the database server "
                f"{self.max_memory_mb:,} MB of memory and {self.max_temp_mb:,} MB of temporary files per query, "
                f"work_mem {WORK_MEM} per sort or hash")


@dataclass(frozen=True)
class Protection:
    """How a console query is protected on this database: the role it runs as (or None) and a sentence saying so;
    whether temp_file_limit can be set and the server's processes measured, and a sentence on what is not."""

    role: str | None
    note: str
    temp_limit: bool = False
    memory_watch: bool = False
    resources: str = ""


@dataclass(frozen=True)
class Example:
    """An example query from sql/examples: file stem, title, one-line description and the SQL text."""

    name: str
    title: str
    description: str
    sql: str


@dataclass(frozen=True)
class ConsoleResult:
    """Rows of one console query (at most `cap`) and how it ran."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    truncated: bool
    elapsed_s: float
    cap: int
    timeout_ms: int
    role_used: str | None
    protection: str
    parameters: tuple[tuple[str, Any], ...] = ()
    truncated_by: str = ""  # "rows" (the row cap) or "bytes" (the result size cap) when truncated
    max_bytes: int = DEFAULT_MAX_BYTES

    def frame(self) -> pd.DataFrame:
        """The rows as a DataFrame ready for display: unique column names, numbers as floats, JSON as text."""
        frame = pd.DataFrame([list(r) for r in self.rows], columns=_unique(self.columns), dtype=object)
        for position in range(frame.shape[1]):
            values = frame.iloc[:, position]
            present = [v for v in values if v is not None]
            if any(isinstance(v, (dict, list, tuple)) for v in present):
                converted = values.map(lambda v: None if v is None else json.dumps(_json_value(v)))
            elif present and all(isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool)
                                 for v in present):
                converted = pd.to_numeric(values.map(lambda v: v if v is None or isinstance(v, int) else float(v)))
            else:
                converted = values.infer_objects()
            frame.isetitem(position, converted)
        return frame

    def to_json(self) -> dict[str, Any]:
        """`{"columns": […], "rows": [[…]…], "truncated": bool}` with JSON-safe values."""
        return {
            "columns": list(self.columns),
            "rows": [[_json_value(v) for v in row] for row in self.rows],
            "truncated": self.truncated,
        }

    def to_csv(self) -> bytes:
        """The rows as UTF-8 CSV with a header line, defused for spreadsheets as the dashboard's exports are."""
        return export.to_csv_bytes(self.frame(), date_format=None)


def limits() -> Limits:
    """The console's limits: $SQL_MAX_ROWS (default 10,000) rows, $SQL_TIMEOUT_MS (default 30 s) for the whole
    query, $SQL_MAX_BYTES (default 5 MB) per result, $SQL_MAX_VALUE_BYTES (default 1 MB) per value,
    $SQL_CONCURRENT (default 2) queries at once per process, and on the database server $SQL_MAX_MEMORY_MB
    (default 500) of memory and $SQL_MAX_TEMP_MB (default 500) of temporary files per query."""
    s = settings.current()
    return Limits(max_rows=s.sql_max_rows, timeout_ms=s.sql_timeout_ms, max_bytes=s.sql_max_bytes,
                  max_value_bytes=s.sql_max_value_bytes, concurrent=s.sql_concurrent,
                  max_memory_mb=s.sql_max_memory_mb, max_temp_mb=s.sql_max_temp_mb)


def _mb(n: int) -> str:
    return f"{n / 1e6:g} MB" if n >= 1_000_000 else f"{n / 1e3:g} kB"


class _Budget:
    """Console queries running in this process: at most `concurrent` at once, one per visitor."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._running = 0
        self._visitors: set[str] = set()

    def running(self) -> int:
        """Console queries running now in this process."""
        with self._cond:
            return self._running

    def acquire(self, visitor: str | None, concurrent: int, wait_s: float) -> None:
        """Take a slot or raise ConsoleBusy (this visitor already has a query running; or every slot stays
        taken for wait_s seconds)."""
        deadline = time.monotonic() + wait_s
        with self._cond:
            # Both wait briefly: a rerun that interrupted the page (a query link opening, a double click) finds
            # the visitor's previous, quick query just ending rather than a refusal.
            while (visitor is not None and visitor in self._visitors) or self._running >= concurrent:
                left = deadline - time.monotonic()
                if left <= 0:
                    if visitor is not None and visitor in self._visitors:
                        raise ConsoleBusy("Your previous query is still running; it ends by itself at the time "
                                          "limit. Run this one when it has finished.")
                    raise ConsoleBusy(f"The console is busy: {self._running} queries are running on this server, "
                                      "its limit. Try again in a few seconds.")
                self._cond.wait(left)
            self._running += 1
            if visitor is not None:
                self._visitors.add(visitor)

    def release(self, visitor: str | None) -> None:
        """Give a slot back."""
        with self._cond:
            self._running -= 1
            if visitor is not None:
                self._visitors.discard(visitor)
            self._cond.notify_all()  # waiters wait for different things: a slot, or their own previous query


_budget = _Budget()


class _Runs:
    """Digests of (browser, query, values) that a browser ran itself in this process, the latest RUNS_REMEMBERED."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: OrderedDict[str, None] = OrderedDict()

    def add(self, key: str) -> None:
        with self._lock:
            self._seen[key] = None
            self._seen.move_to_end(key)
            while len(self._seen) > RUNS_REMEMBERED:
                self._seen.popitem(last=False)

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return key in self._seen


_runs = _Runs()


def _run_key(browser: str, sql: str, params: Mapping[str, Any]) -> str:
    text = json.dumps([browser, sql, sorted((str(k), str(v)) for k, v in params.items())])
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def remember_run(browser: str, sql: str, params: Mapping[str, Any]) -> None:
    """Note that this browser ran `sql` with `params` itself (it pressed Run), so its own link may run it again."""
    _runs.add(_run_key(browser, sql, params))


def ran_before(browser: str, sql: str, params: Mapping[str, Any]) -> bool:
    """Whether this browser ran exactly this query with these values itself in this server process: a `?sql=`
    link runs at once only then; opened by anyone else, it shows the query and waits for a click."""
    return _run_key(browser, sql, params) in _runs


_pools: dict[tuple[str, bool, int], Database] = {}
_pools_lock = threading.Lock()


def console_db(db: Database, size: int) -> Database:
    """The console's own small pool on the same database as `db` (one per address, mode and size per process: a
    pool made for fewer queries at once would make the others wait for a connection)."""
    with _pools_lock:
        pool = _pools.get((db.url, db.read_only, size))
        if pool is None:
            pool = Database(db.url, read_only=db.read_only, pool_size=size, label=db.label)
            _pools[(db.url, db.read_only, size)] = pool
        return pool


def protection(db: Database | None = None) -> Protection:
    """Whether console queries can run as the reader role here, whether temp_file_limit can be set for them and
    their server processes measured (the server runs on this machine), and the sentences the page shows."""
    db = db or runtime.get_db()
    server = db.fetch_rows(load_sql("console_reader_status"), {"role": READER_ROLE})[0]
    status = server["status"]
    temp_limit = bool(server["superuser"]) or (
        server["version_num"] >= 150_000 and bool(db.fetch_value(load_sql("console_temp_limit_allowed"))))
    memory_watch = consolewatch.is_local(server["pid"], server["backend_start"])
    resources = " ".join(([] if memory_watch else [
        "The memory cap is not enforced here: the database server does not run on this machine, and PostgreSQL "
        "shows a process's memory only to that process itself; the time limit and work_mem still bound a query."])
        + ([] if temp_limit else [
        "Temporary files are not limited here: the database user may not set temp_file_limit (a superuser can "
        "allow it with GRANT SET ON PARAMETER temp_file_limit, PostgreSQL 15 and later)."]))
    guard = _guard(db, status)
    return replace(guard, temp_limit=temp_limit, memory_watch=memory_watch, resources=resources)


def _guard(db: Database, status: str) -> Protection:
    if status == "ok":
        return Protection(READER_ROLE, f"Queries run as the database role {READER_ROLE}, which can only read the "
                                       "ctgov tables, inside a READ ONLY transaction.")
    if db.read_only:
        reason = "this database is connected read-only, so the app created no reader role"
    elif status == "missing":
        reason = (f"the role {READER_ROLE} could not be created (the database user lacks the CREATEROLE "
                  "privilege)")
    elif status == "not_member":
        reason = f"the database user is not allowed to switch to the role {READER_ROLE}"
    else:
        reason = f"the role {READER_ROLE} has no access to schema ctgov"
    return Protection(None, f"Only the READ ONLY transaction and the query check protect the data: {reason}.")


def check(sql: str) -> GuardedQuery:
    """The guard's verdict plus the console's own rules: only schemas ctgov and information_schema, the latter
    scoped to the trial schema, relations named without a schema read from ctgov, and no casts that name
    catalog objects (services/consolescope.py).

    AACT-style text is accepted first (services/data/sqlcompat.py): public./ctgov_v2. prefixes on the trial tables
    mean ctgov., and EXPLAIN [ANALYZE] in front of a query the guard accepts shows its plan.
    """
    explain = sqlcompat.split_explain(sql)
    guarded = check_query(sqlcompat.to_trial_schema(explain.inner if explain else sql))
    for table in guarded.tables:
        if table.split(".", 1)[0] not in READABLE_SCHEMAS:
            raise UnsafeQuery(
                f"{table} is outside the trial data; the console reads the ctgov tables "
                "(and information_schema to look up columns)."
            )
    # Bare names are read as ctgov.<name> by the guard: written so, they cannot reach a public table of an
    # external database through the search path.
    scoped = consolescope.scope(guarded.qualified(DEFAULT_SCHEMA), SCOPE_SCHEMAS)
    return replace(guarded, sql=explain.wrap(scoped) if explain is not None else scoped)


def run_query(sql: str, params: Mapping[str, Any] | None = None, *, db: Database | None = None,
              max_rows: int | None = None, timeout_ms: int | None = None,
              visitor: str | None = None) -> ConsoleResult:
    """Check and run one console query; UnsafeQuery/BadInput for refusals, QueryTimeout past the limit,
    ResultTooLarge for a value over the per-value cap, ConsoleBusy when the budget is taken.

    `visitor` (a key for the browser) allows that visitor one query at a time; every query shares the
    process's budget of `SQL_CONCURRENT` on the console's own pool.
    """
    started = time.perf_counter()
    guarded = check(sql)
    values = guarded.bind(params or {})
    configured = limits()
    cap = max(1, min(MAX_ROWS_LIMIT, max_rows if max_rows is not None else configured.max_rows))
    timeout = max(1, timeout_ms if timeout_ms is not None else configured.timeout_ms)
    db = db or runtime.get_db()
    guard = protection(db)

    def convert(type_names: Sequence[str], given: Sequence[Any]) -> list[Any]:
        return [coerce_value(name, type_name, value)
                for name, type_name, value in zip(guarded.parameters, type_names, given, strict=True)]

    settings = {"work_mem": WORK_MEM}
    if guard.temp_limit:
        settings["temp_file_limit"] = f"{configured.max_temp_mb}MB"
    watch = consolewatch.MemoryCap(configured.max_memory_mb * MB) if guard.memory_watch else None
    _budget.acquire(visitor, configured.concurrent, BUSY_WAIT_S)
    try:
        columns, rows, truncated = console_db(db, configured.concurrent).fetch_guarded(
            guarded.sql, values, max_rows=cap, timeout_ms=timeout, role=guard.role, search_path=SEARCH_PATH,
            convert=convert, max_bytes=configured.max_bytes, max_value_bytes=configured.max_value_bytes,
            settings=settings, watch=watch,
        )
    except QueryTooHeavy as err:  # temp_file_limit, the one server limit the console sets
        if not guard.temp_limit:
            raise
        raise QueryTooHeavy(f"The query needed more than {configured.max_temp_mb:,} MB of temporary files on the "
                            "database server, the console's limit, and was stopped.") from err
    except QueryTimeout as err:
        if watch is not None and watch.stopped:
            raise QueryTooHeavy(
                f"The query took {math.ceil(watch.peak_bytes / MB):,} MB of the database server's memory, "
                f"over the console's limit of {configured.max_memory_mb:,} MB, and was stopped.") from err
        raise QueryTimeout(
            f"The query ran past the console's time limit of {timeout / 1000:g} s and was cancelled.",
            hint="Add a WHERE clause or a LIMIT, aggregate earlier, or check that every join has a join condition.",
        ) from err
    finally:
        _budget.release(visitor)
    return ConsoleResult(
        columns=tuple(columns), rows=tuple(rows), truncated=bool(truncated),
        elapsed_s=round(time.perf_counter() - started, 3), cap=cap, timeout_ms=timeout,
        role_used=guard.role, protection=guard.note,
        parameters=tuple(zip(guarded.parameters, values, strict=True)),
        truncated_by=truncated, max_bytes=configured.max_bytes,
    )


def coerce_value(name: str, type_name: str, value: Any) -> Any:
    """Turn a parameter value (often text from a form or the command line) into the type PostgreSQL inferred.

    An empty text is NULL; arrays (type names such as "text[]" or "_text") take comma-separated text.
    """
    if value is None:
        return None
    element = type_name[:-2] if type_name.endswith("[]") else type_name[1:] if type_name.startswith("_") else ""
    if element:
        if isinstance(value, (list, tuple)):
            items: Sequence[Any] = value
        else:
            items = [part.strip() for part in str(value).split(",")] if str(value).strip() else []
        return [coerce_value(name, element, item) for item in items]
    if not isinstance(value, str):
        if type_name in _TEXT_TYPES:
            return str(value)
        if type_name in ("float4", "float8") and isinstance(value, (int, decimal.Decimal)):
            return float(value)
        if type_name == "numeric" and isinstance(value, (int, float)):
            return decimal.Decimal(str(value))
        return value
    if not value.strip():
        return None
    if type_name in _TEXT_TYPES:
        return value
    text = value.strip()
    try:
        if type_name in _INTEGER_TYPES:
            return int(text)
        if type_name in ("float4", "float8"):
            return float(text)
        if type_name == "numeric":
            number = decimal.Decimal(text)
            if not number.is_finite():
                raise ValueError(text)
            return number
        if type_name == "bool":
            if text.lower() in _TRUE:
                return True
            if text.lower() in _FALSE:
                return False
            raise ValueError(text)
        if type_name == "date":
            return dt.date.fromisoformat(text)
        if type_name == "timestamp":
            moment = dt.datetime.fromisoformat(text)
            return moment.astimezone(dt.UTC).replace(tzinfo=None) if moment.tzinfo else moment
        if type_name == "timestamptz":
            moment = dt.datetime.fromisoformat(text)
            return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)
        if type_name in ("json", "jsonb"):
            return json.loads(text)
        if type_name == "uuid":
            return uuid.UUID(text)
    except (ValueError, decimal.InvalidOperation, RecursionError):  # RecursionError: JSON nested too deeply
        shown = value if len(value) <= 60 else value[:59] + "…"  # a link can carry 100 kB
        raise BadInput(f"The parameter :{name} needs {_describe_type(type_name)}, not {shown!r}.") from None
    raise BadInput(
        f"The parameter :{name} is of type {type_name}, which cannot be typed in here; "
        f"write CAST(:{name} AS text) in the query and convert it there."
    )


def _describe_type(type_name: str) -> str:
    return {
        **_INTEGER_TYPES, "float4": "a number", "float8": "a number", "numeric": "a number",
        "bool": "true or false", "date": "a date such as 2024-01-31",
        "timestamp": "a date and time such as 2024-01-31 12:00", "timestamptz": "a date and time such as "
        "2024-01-31 12:00+00:00", "json": "JSON", "jsonb": "JSON", "uuid": "a UUID",
    }.get(type_name, type_name)


def _unique(columns: Sequence[str]) -> list[str]:
    """The k-th repeat of a name becomes name_k, or the next free suffix if a column is already called that."""
    seen: dict[str, int] = {}
    taken: set[str] = set()
    out = []
    for column in columns:
        name, count = column, seen.get(column, 1)
        while name in taken:
            count += 1
            name = f"{column}_{count}"
        seen[column] = count
        taken.add(name)
        out.append(name)
    return out


def _json_value(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() and value.is_finite() else float(value)
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    return str(value)


def examples() -> list[Example]:
    """The example queries in sql/examples, in file-name order (title and description from the leading comments)."""
    found = []
    for path in sorted(EXAMPLES_DIR.glob("*.sql")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        title = lines[0].removeprefix("--").strip() if lines else path.stem
        description = lines[1].removeprefix("--").strip() if len(lines) > 1 and lines[1].startswith("--") else ""
        found.append(Example(path.stem, title, description, text))
    return found


def schema_columns(db: Database | None = None) -> pd.DataFrame:
    """Tables and columns of schema ctgov from information_schema: table_name, column_name, data_type, is_view."""
    db = db or runtime.get_db()
    return db.fetch_df(load_sql("console_schema_columns"))
