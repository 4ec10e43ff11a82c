"""The one door to the database: SQLAlchemy async engine on asyncpg, driven by one loop thread.

Pages and services call the synchronous facade (`Database.fetch_df`, `fetch_many`, …); every
call is submitted to a single long-lived event loop running in a background thread, so the
asyncpg pool is always used from the loop that created it. Each query runs in its own
transaction with a statement timeout; errors come out typed (DatabaseUnavailable,
QueryTimeout, QueryFailed).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import decimal
import io
import logging
import re
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

import asyncpg
import pandas as pd
from sqlalchemy import exc as sa_exc
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from services.data import resultcap
from services.errors import (
    DatabaseBusy,
    DatabaseUnavailable,
    QueryFailed,
    QueryTimeout,
    QueryTooHeavy,
    TrialLandscapeError,
)

SQL_DIR = Path(__file__).resolve().parents[2] / "sql"
DEFAULT_TIMEOUT_MS = 15_000
MAX_POOL = 5
POOL_WAIT_S = 20  # a page waits this long for one of the pool's connections before it is told "busy"
PROBE_WAIT_S = 5  # readiness and "busy or down?" wait this long for the probe's own connection
T = TypeVar("T")

# SQLSTATE classes/codes that mean "the server is not there (now)".
_UNAVAILABLE_CODES = {"57P01", "57P02", "57P03", "53300", "3D000"}
_NAME_RE = re.compile(r"^[a-z_][a-z0-9_]*$")
IMPORT_LOCK_KEY = 7_310_001  # the advisory lock replace_rows takes, so imports run one at a time
# How often a watched console query's server process is measured (fetch_guarded's `watch`): at the 250 MB/s
# a jsonb_agg of every study grows by, a cap is passed by at most ~25 MB before the cancel is sent.
WATCH_INTERVAL_S = 0.1
_log = logging.getLogger(__name__)


class _LoopThread:
    """One asyncio loop in a daemon thread per process; coroutines are submitted to it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="db-loop", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Awaitable[T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)  # type: ignore[arg-type]


_loop_lock = threading.Lock()
_loop: _LoopThread | None = None


def _loop_thread() -> _LoopThread:
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = _LoopThread()
        return _loop


def run_sync(coro: Awaitable[T], timeout: float | None = None) -> T:
    """Run a coroutine on the database loop and wait for its result."""
    return _loop_thread().submit(coro).result(timeout)


def run_typed(coro: Awaitable[T]) -> T:
    """run_sync, with driver errors turned into our typed errors."""
    try:
        return run_sync(coro)
    except TrialLandscapeError:
        raise
    except Exception as err:  # noqa: BLE001 - mapped to a typed error
        raise translate_error(err) from err


@cache
def load_sql(name: str) -> str:
    """Text of a named query: sql/queries/<name>.sql (the file name is the function name)."""
    if not _NAME_RE.match(name):
        raise ValueError(f"not a query name: {name!r}")
    return (SQL_DIR / "queries" / f"{name}.sql").read_text(encoding="utf-8")


_BIND_NAME = re.compile(r"(?<![:\w\x5c]):(\w+)(?!:)")  # SQLAlchemy's reading of `:name` in text()


def with_literals(sql: str, params: Mapping[str, Any]) -> str:
    """The statement with each `:name` replaced by its value as a PostgreSQL literal (SQLAlchemy's own
    quoting; lists as text arrays), to show and copy ("Show the SQL"). Never for running: queries bind."""
    from sqlalchemy import Text, bindparam
    from sqlalchemy.dialects import postgresql

    named = set(_BIND_NAME.findall(sql))  # the names text() reads, as when the statement runs
    binds = [bindparam(k, v, type_=postgresql.ARRAY(Text)) if isinstance(v, (list, tuple))
             else bindparam(k, v) for k, v in params.items() if k in named]
    statement = text(sql).bindparams(*binds)
    return str(statement.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))


def schema_files() -> list[Path]:
    """Schema DDL files in the order they are applied."""
    return sorted((SQL_DIR / "schema").glob("*.sql"))


def to_async_url(url: str) -> str:
    """postgresql://… → postgresql+asyncpg://… (what SQLAlchemy's asyncpg dialect expects).

    libpq's `sslmode=…` (the usual spelling, e.g. for the AACT cloud) becomes asyncpg's `ssl=…`, which takes
    the same values; SQLAlchemy hands every query parameter to asyncpg.connect, which knows no `sslmode`.
    """
    for prefix in ("postgresql+asyncpg://", "postgresql://", "postgres://"):
        if url.startswith(prefix):
            address, mark, query = url[len(prefix):].partition("?")
            return "postgresql+asyncpg://" + address + mark + re.sub(r"(^|&)sslmode=", r"\1ssl=", query)
    raise DatabaseUnavailable(f"DATABASE_URL must start with postgresql:// (got {describe_url(url)!r}).")


def describe_url(url: str) -> str:
    """A printable description of a database URL: host and database, never the password."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "an unreadable address"
    host = parts.hostname or ""
    if not host:
        query_host = re.search(r"host=([^&]+)", parts.query or "")
        host = f"socket {query_host.group(1)}" if query_host else "local socket"
    db = (parts.path or "/").lstrip("/") or "postgres"
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # urlsplit reads the port only when asked ("54x2", "99999")
        port = " (unreadable port)"
    return f"{host}{port}/{db}"


def translate_error(err: BaseException) -> TrialLandscapeError:
    """Map driver/SQLAlchemy/OS errors to our typed errors."""
    if isinstance(err, TrialLandscapeError):
        return err
    cause: BaseException = err
    if isinstance(err, sa_exc.DBAPIError) and err.orig is not None:
        cause = err.orig.__cause__ or err.orig
    code = getattr(cause, "sqlstate", None) or getattr(getattr(err, "orig", None), "pgcode", None)
    if isinstance(cause, asyncpg.exceptions.QueryCanceledError) or code == "57014":
        return QueryTimeout("The query ran past its time limit and was cancelled.")
    if code == "53400":  # configuration_limit_exceeded: temp_file_limit, for one
        return QueryTooHeavy(f"The database stopped the query: {_first_line(cause)}")
    if (
        isinstance(cause, (OSError, ConnectionError, asyncio.TimeoutError, asyncpg.exceptions.InterfaceError,
                           asyncpg.exceptions.ConnectionDoesNotExistError, asyncpg.exceptions.CannotConnectNowError,
                           asyncpg.exceptions.TooManyConnectionsError))
        or (isinstance(code, str) and (code.startswith("08") or code in _UNAVAILABLE_CODES))
        or (isinstance(err, sa_exc.DBAPIError) and err.connection_invalidated)
        or isinstance(err, sa_exc.TimeoutError)
    ):
        return DatabaseUnavailable(f"The database is not reachable ({type(cause).__name__}: {_first_line(cause)}).")
    if isinstance(err, sa_exc.InterfaceError):
        return DatabaseUnavailable(f"The database connection failed ({_first_line(cause)}).")
    # A bulk copy's context says which of the rows sent failed ("COPY studies, line 3, column enrollment: …").
    context = getattr(cause, "context", None)
    where = f" ({context.splitlines()[0][:300]})" if isinstance(context, str) and context.startswith("COPY ") else ""
    return QueryFailed(f"The database refused the query: {_first_line(cause)}{where}")


def _first_line(err: BaseException) -> str:
    msg = str(err).strip().splitlines()
    return msg[0][:300] if msg else type(err).__name__


def _frame(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> pd.DataFrame:
    df = pd.DataFrame([tuple(r) for r in rows], columns=list(columns))
    for i in range(df.shape[1]):  # by position: two result columns may share a name
        col = df.iloc[:, i]
        # A column has one SQL type: its first non-NULL value tells whether it is numeric.
        if col.dtype == object and isinstance(next((v for v in col if v is not None), None), decimal.Decimal):
            df.isetitem(i, pd.to_numeric(col, errors="coerce"))
    return df


@dataclass(frozen=True)
class Health:
    """What the health check found."""

    ok: bool
    database: str
    server_version: str
    read_only: bool
    latency_ms: float
    error: str = ""


class Database:
    """Synchronous facade over one async engine (pool ≤ 5) owned by the process's loop thread."""

    def __init__(self, url: str, *, read_only: bool = False, statement_timeout_ms: int = DEFAULT_TIMEOUT_MS,
                 pool_size: int = MAX_POOL, label: str = "") -> None:
        self.url = url
        self.read_only = read_only
        self.statement_timeout_ms = statement_timeout_ms
        self.label = label or describe_url(url)
        self.pool_size = max(1, min(pool_size, MAX_POOL))
        self._engine: AsyncEngine | None = None
        self._side: AsyncEngine | None = None
        self._probe: AsyncEngine | None = None
        self._pinging: asyncio.Future[tuple[str, str]] | None = None  # the ping in flight (on the loop thread)
        self._engine_lock = threading.Lock()
        atexit.register(self.close)

    # ---- engine lifecycle -------------------------------------------------------------
    def _get_engine(self, probe: bool = False) -> AsyncEngine:
        """The pages' pool, or (probe) one connection of its own for health checks, so a full pool is not "down"."""
        with self._engine_lock:
            if probe:
                if self._probe is None:
                    self._probe = self._new_engine(pool_size=1, max_overflow=0, pool_timeout=PROBE_WAIT_S,
                                                   pool_pre_ping=True, pool_recycle=1800)
                return self._probe
            if self._engine is None:
                self._engine = self._new_engine(pool_size=self.pool_size, max_overflow=0, pool_timeout=POOL_WAIT_S,
                                                pool_pre_ping=True, pool_recycle=1800)
            return self._engine

    def _side_engine(self) -> AsyncEngine:
        """An engine without a pool, for the rare statement that must not wait for one: cancelling a console query
        while every pooled connection is busy."""
        with self._engine_lock:
            if self._side is None:
                self._side = self._new_engine(poolclass=NullPool)
            return self._side

    def _new_engine(self, **pool: Any) -> AsyncEngine:
        # Every statement is planned for its own values: asyncpg prepares statements, and after five runs
        # PostgreSQL may switch one to a generic plan that ignores them; for an id list (unnest of a
        # parameter, estimated at 10 rows) that plan took the relevance order at 575,000 studies from 1 s
        # past its 60 s limit. Planning costs about a millisecond here.
        settings = {"application_name": "trial-landscape", "plan_cache_mode": "force_custom_plan",
                    **({"default_transaction_read_only": "on"} if self.read_only else {})}
        return create_async_engine(
            to_async_url(self.url),
            connect_args={"server_settings": settings, "timeout": 10, "command_timeout": None}, **pool)

    def close(self) -> None:
        """Close the pool (before the embedded server stops, so exit is quiet)."""
        with self._engine_lock:
            engines = (self._engine, self._side, self._probe)
            self._engine = self._side = self._probe = None
        for engine in [e for e in engines if e is not None and _loop is not None and _loop.thread.is_alive()]:
            with contextlib.suppress(Exception):  # closing a broken pool must not mask the real exit reason
                run_sync(engine.dispose(), timeout=10)

    # ---- core execution ---------------------------------------------------------------
    async def _in_transaction(self, fn: Callable[[AsyncConnection], Awaitable[T]], timeout_ms: int | None,
                              write: bool = False) -> T:
        if write and self.read_only:
            raise QueryFailed("This database is connected read-only; nothing can be written to it.")
        engine = self._get_engine()
        connected = False
        try:
            async with engine.connect() as conn, conn.begin():
                connected = True
                limit = self.statement_timeout_ms if timeout_ms is None else timeout_ms
                await conn.execute(text("SELECT set_config('statement_timeout', :t, true)"),
                                   {"t": str(int(limit))})
                return await fn(conn)
        except TrialLandscapeError:
            raise
        except (Exception, asyncio.CancelledError) as err:  # translated, never swallowed
            typed = translate_error(err)
            if connected or not isinstance(typed, DatabaseUnavailable):
                raise typed from err
            # No connection from the pool (all in use, or a new one slow to open): busy, unless the probe fails too.
            await self._ping()
            raise DatabaseBusy(f"The database is busy: none of this app's {self.pool_size} connections came free "
                               f"within {POOL_WAIT_S} s ({type(err).__name__}), though the database answers.") from err

    async def _ping(self) -> tuple[str, str]:
        """Server version and read-only flag on the probe's connection; callers at one time share one ping."""
        if self._pinging is None or self._pinging.done():
            self._pinging = asyncio.ensure_future(self._ping_once())
        return await asyncio.shield(self._pinging)

    async def _ping_once(self) -> tuple[str, str]:
        try:
            async with self._get_engine(probe=True).connect() as conn, conn.begin():
                await conn.execute(text("SELECT set_config('statement_timeout', '5000', true)"))
                row = (await conn.execute(text("SELECT current_setting('server_version'), "
                                               "current_setting('transaction_read_only')"))).one()
                return str(row[0]), str(row[1])
        except (Exception, asyncio.CancelledError) as err:  # translated, never swallowed
            raise translate_error(err) from err

    async def _fetch(self, sql: str, params: Mapping[str, Any] | None,
                     timeout_ms: int | None) -> tuple[list[str], list[tuple[Any, ...]]]:
        async def work(conn: AsyncConnection) -> tuple[list[str], list[tuple[Any, ...]]]:
            result = await conn.execute(text(sql), dict(params or {}))
            return list(result.keys()), [tuple(r) for r in result.fetchall()]

        return await self._in_transaction(work, timeout_ms)

    def _sync(self, coro: Awaitable[T]) -> T:
        return run_typed(coro)

    # ---- public facade ----------------------------------------------------------------
    def fetch_df(self, sql: str, params: Mapping[str, Any] | None = None, *,
                 timeout_ms: int | None = None) -> pd.DataFrame:
        """Run one read query; return its rows as a DataFrame (numeric → float)."""
        cols, rows = self._sync(self._fetch(sql, params, timeout_ms))
        return _frame(cols, rows)

    def fetch_rows(self, sql: str, params: Mapping[str, Any] | None = None, *,
                   timeout_ms: int | None = None) -> list[dict[str, Any]]:
        """Run one read query; return its rows as dicts."""
        cols, rows = self._sync(self._fetch(sql, params, timeout_ms))
        return [dict(zip(cols, r, strict=True)) for r in rows]

    def fetch_value(self, sql: str, params: Mapping[str, Any] | None = None, *,
                    timeout_ms: int | None = None) -> Any:
        """Run one read query; return the first column of the first row (or None)."""
        _, rows = self._sync(self._fetch(sql, params, timeout_ms))
        return rows[0][0] if rows else None

    def fetch_guarded(self, sql: str, values: Sequence[Any] = (), *, max_rows: int, timeout_ms: int | None = None,
                      role: str | None = None, search_path: str | None = None,
                      convert: Callable[[Sequence[str], Sequence[Any]], Sequence[Any]] | None = None,
                      max_bytes: int | None = None, max_value_bytes: int | None = None,
                      settings: Mapping[str, str] | None = None, watch: Callable[[int], bool] | None = None,
                      ) -> tuple[list[str], list[tuple[Any, ...]], str]:
        """Run checked console SQL with positional `$n` values; return (columns, rows ≤ max_rows, truncated).

        The text goes to the server unchanged (no `text()` rewriting), in a READ ONLY transaction with
        standard_conforming_strings on, the given search_path and `SET LOCAL ROLE role`. Rows come
        from a server-side cursor in batches, so no more than max_rows + 1 ever reach this process.
        `convert(type_names, values)` sees the parameter types PostgreSQL inferred (e.g. "int8",
        "_text") and returns the values to bind.

        `timeout_ms` bounds the whole query, not each batch: every fetch runs with what is left of it.
        With byte caps the server measures each value (its text form) and keeps a running total before a
        row is sent: a value over max_value_bytes raises ResultTooLarge, and rows past max_bytes are never
        sent — the query is cancelled and `truncated` is "bytes" ("rows" past the row cap, "" when complete).
        EXPLAIN's plan lines are measured as they arrive, under the same caps (services/data/resultcap.py).

        `settings` (name → value) hold for this transaction only; they are set before the role switch, so a
        setting only a privileged user may change (temp_file_limit) is set with the connecting user's rights.
        `watch(pid)` is called with the server process's id every WATCH_INTERVAL_S while the query runs; when it
        returns True the query is cancelled (from a connection of its own) and QueryTimeout raised.
        """
        if role is not None and not _NAME_RE.match(role):
            raise QueryFailed(f"not a role name: {role!r}")
        if any(not _NAME_RE.match(name) for name in settings or {}):
            raise QueryFailed(f"not setting names: {sorted(settings or {})!r}")
        limit_ms = self.statement_timeout_ms if timeout_ms is None else timeout_ms
        deadline = time.monotonic() + limit_ms / 1000

        async def work(conn: AsyncConnection) -> tuple[list[str], list[tuple[Any, ...]], str]:
            await conn.execute(text("SET TRANSACTION READ ONLY"))
            chosen = {"standard_conforming_strings": "on", **({"search_path": search_path} if search_path else {}),
                      **(settings or {})}
            for name, value in chosen.items():
                await conn.execute(text("SELECT set_config(:n, :v, true)"), {"n": name, "v": value})
            if role:
                await conn.execute(text(f"SET LOCAL ROLE {role}"))
            raw = await conn.get_raw_connection()
            pg: asyncpg.Connection = raw.driver_connection  # type: ignore[assignment]
            statement = await pg.prepare(sql)
            bound = list(values)
            if convert is not None:
                bound = list(convert([p.name for p in statement.get_parameters()], bound))
            columns = [a.name for a in statement.get_attributes()]
            meter = None
            if columns and (max_bytes is not None or max_value_bytes is not None):
                # EXPLAIN cannot be a subquery: its lines are measured here as they arrive.
                server = not re.match(r"\s*explain\b", sql, re.IGNORECASE)
                if server:
                    statement = await pg.prepare(resultcap.measured_sql(sql, len(columns), max_bytes,
                                                                        max_value_bytes))
                meter = resultcap.Meter(columns, max_bytes, max_value_bytes, server=server)
            watcher = _BackendWatch(self, pg.get_server_pid(), watch) if watch is not None else None
            try:
                cursor = await statement.cursor(*bound)
                rows, truncated = await resultcap.collect(pg, cursor, meter, max_rows, deadline)
            finally:
                if watcher is not None:
                    await watcher.stop()
            return columns, rows, truncated

        return self._sync(self._in_transaction(work, limit_ms))

    async def _cancel_backend(self, pid: int) -> None:
        async with self._side_engine().connect() as conn:
            await conn.execute(text("SELECT pg_cancel_backend(:pid)"), {"pid": pid})

    def fetch_many(self, queries: Mapping[str, tuple[str, Mapping[str, Any] | None]], *,
                   timeout_ms: int | None = None) -> dict[str, pd.DataFrame | TrialLandscapeError]:
        """Run independent read queries concurrently (bounded by the pool).

        Each result is a DataFrame, or the typed error of that query alone, so one slow or
        failing facet never takes the others down.
        """
        async def one(sql: str, params: Mapping[str, Any] | None) -> pd.DataFrame | TrialLandscapeError:
            try:
                cols, rows = await self._fetch(sql, params, timeout_ms)
                return _frame(cols, rows)
            except TrialLandscapeError as err:
                return err

        async def gather() -> list[pd.DataFrame | TrialLandscapeError]:
            return await asyncio.gather(*(one(sql, params) for sql, params in queries.values()))

        results = self._sync(gather())
        out = dict(zip(queries.keys(), results, strict=True))
        unavailable = [r for r in results if isinstance(r, (DatabaseUnavailable, DatabaseBusy))]
        if unavailable and len(unavailable) == len(results):
            raise unavailable[0]
        return out

    def fetch_df_parts(self, queries: Sequence[tuple[str, Mapping[str, Any] | None]], *,
                       timeout_ms: int | None = None) -> pd.DataFrame:
        """Run read queries that return the same columns concurrently (bounded by the pool); return all their rows,
        in query order, as one DataFrame typed as if a single query had returned them. The first error is raised."""
        async def gather() -> list[tuple[list[str], list[tuple[Any, ...]]]]:
            return await asyncio.gather(*(self._fetch(sql, params, timeout_ms) for sql, params in queries))

        parts = self._sync(gather())
        return _frame(parts[0][0] if parts else [], [row for _, rows in parts for row in rows])

    def copy_csv(self, sql: str, params: Mapping[str, Any] | None = None, *,
                 timeout_ms: int | None = None) -> io.BufferedReader:
        """Run one read query through `COPY (…) TO STDOUT`; return its rows as a readable CSV stream.

        A header line comes first; NULL is written as `\\N` (so an empty string stays an empty string).
        Parameters are `:name` as elsewhere. Meant for bulk reads (millions of rows) into numpy/pandas:
        the stream lets go of each piece once it has been read, so the text is never held twice.
        """
        async def work(conn: AsyncConnection) -> io.BufferedReader:
            compiled = text(sql).compile(dialect=conn.dialect)
            bound = dict(params or {})
            values = [bound[name] for name in (compiled.positiontup or [])]
            raw = await conn.get_raw_connection()
            pg: asyncpg.Connection = raw.driver_connection  # type: ignore[assignment]
            chunks: list[bytes] = []

            async def sink(chunk: bytes) -> None:
                chunks.append(bytes(chunk))

            await pg.copy_from_query(compiled.string, *values, output=sink, format="csv", header=True,
                                     null="\\N")
            return io.BufferedReader(_ChunkStream(chunks), buffer_size=1 << 20)

        return self._sync(self._in_transaction(work, timeout_ms))

    def execute(self, sql: str, params: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None, *,
                timeout_ms: int | None = None) -> int:
        """Run one writing statement (or executemany with a list of params); return rows affected."""
        async def work(conn: AsyncConnection) -> int:
            bound: Any = list(params) if isinstance(params, list) else dict(cast(Mapping[str, Any], params or {}))
            result = await conn.execute(text(sql), bound)
            return int(result.rowcount or 0)

        return self._sync(self._in_transaction(work, timeout_ms, write=True))

    def fetch_locked(self, lock_name: str, sql: str, params: Mapping[str, Any] | None = None, *,
                     timeout_ms: int | None = None) -> list[dict[str, Any]]:
        """Run one (writing) query after taking the transaction-level advisory lock named `lock_name`; return its
        rows. Callers with the same name run one after another, each seeing the others' committed rows."""
        async def work(conn: AsyncConnection) -> list[dict[str, Any]]:
            await conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:n))"), {"n": lock_name})
            result = await conn.execute(text(sql), dict(params or {}))
            keys = list(result.keys())
            return [dict(zip(keys, row, strict=True)) for row in result.fetchall()]

        return self._sync(self._in_transaction(work, timeout_ms, write=True))

    def execute_script(self, script: str, *, timeout_ms: int | None = 600_000) -> None:
        """Run a multi-statement SQL script (schema DDL) in one transaction."""
        async def work(conn: AsyncConnection) -> None:
            raw = await conn.get_raw_connection()
            await raw.driver_connection.execute(script)  # type: ignore[union-attr]

        self._sync(self._in_transaction(work, timeout_ms, write=True))

    def replace_rows(self, delete_keys: Mapping[str, Sequence[str]], tables: Mapping[str, tuple[Sequence[str], Iterable[Sequence[Any]]]],
                     *, csv_tables: Mapping[str, tuple[Sequence[str], Any]] | None = None,
                     before: Sequence[str] = (), after: Sequence[str] = (),
                     timeout_ms: int | None = 3_600_000) -> dict[str, int]:
        """Replace rows in one transaction: delete by key, then bulk COPY the new rows.

        delete_keys: table → key values (rows `WHERE nct_id = ANY(keys)` are deleted first);
        tables: "schema.table" → (columns, rows of Python values); csv_tables: "schema.table" →
        (columns, a binary file-like of `|`-delimited CSV, no header, empty = NULL). `before`/`after` are SQL
        statements run inside the same transaction. An advisory lock serialises imports.
        Returns rows copied per table. Any failure rolls everything back.
        """
        async def work(conn: AsyncConnection) -> dict[str, int]:
            raw = await conn.get_raw_connection()
            pg: asyncpg.Connection = raw.driver_connection  # type: ignore[assignment]
            await pg.execute("SELECT pg_advisory_xact_lock($1)", IMPORT_LOCK_KEY)
            for stmt in before:
                await pg.execute(stmt)
            for table, keys in delete_keys.items():
                schema, name = _split_table(table)
                await pg.execute(f'DELETE FROM "{schema}"."{name}" WHERE nct_id = ANY($1::varchar[])', list(keys))
            counts: dict[str, int] = {}
            for table, (columns, rows) in tables.items():
                schema, name = _split_table(table)
                records = rows if isinstance(rows, list) else list(rows)
                if records:
                    await pg.copy_records_to_table(name, schema_name=schema, columns=list(columns), records=records)
                counts[table] = len(records)
            for table, (columns, source) in (csv_tables or {}).items():
                schema, name = _split_table(table)
                status = await pg.copy_to_table(name, schema_name=schema, columns=list(columns), source=source,
                                                format="csv", delimiter="|", header=False, null="")
                counts[table] = int(str(status).split()[-1])
            for stmt in after:
                await pg.execute(stmt)
            return counts

        return self._sync(self._in_transaction(work, timeout_ms, write=True))

    async def hold_connection(self) -> tuple[Any, Any]:
        """A pooled connection the caller keeps across calls (services/data/loaders/bulk.py): (SQLAlchemy
        connection, its asyncpg connection). The caller closes the first; no transaction is begun."""
        if self.read_only:
            raise QueryFailed("This database is connected read-only; nothing can be written to it.")
        conn = await self._get_engine().connect()
        raw = await conn.get_raw_connection()
        return conn, raw.driver_connection

    def health(self) -> Health:
        """Ping the server outside the pages' pool: version, read-only flag and round-trip time; never raises."""
        started = time.perf_counter()
        try:
            version, read_only = self._sync(self._ping())
            return Health(True, self.label, version, read_only == "on" or self.read_only,
                          (time.perf_counter() - started) * 1000)
        except TrialLandscapeError as err:
            return Health(False, self.label, "", self.read_only, (time.perf_counter() - started) * 1000, str(err))


class _BackendWatch:
    """Calls `over(pid)` every WATCH_INTERVAL_S while a console query runs; when it answers True, cancels that
    server process's query over a connection of its own (every pooled one may be busy with such queries)."""

    def __init__(self, db: Database, pid: int, over: Callable[[int], bool]) -> None:
        self.db, self.pid, self.over = db, pid, over
        self.cancelling = False
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while not self.over(self.pid):
            await asyncio.sleep(WATCH_INTERVAL_S)
        self.cancelling = True
        try:
            await self.db._cancel_backend(self.pid)
        except Exception as err:  # noqa: BLE001 - the time limit still stops the query; say why this did not
            _log.warning("could not cancel console query of server process %s: %s", self.pid, translate_error(err))

    async def stop(self) -> None:
        """Stop measuring; a cancel already under way is awaited, so it cannot reach the connection's next query."""
        if not self.cancelling:
            self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


class _ChunkStream(io.RawIOBase):
    """A read-once stream over a list of byte chunks that drops each chunk as soon as it is consumed."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks
        self._chunks.reverse()  # pop() from the end is cheap
        self._offset = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        written = 0
        while written < len(view) and self._chunks:
            chunk = self._chunks[-1]
            take = min(len(view) - written, len(chunk) - self._offset)
            view[written:written + take] = chunk[self._offset:self._offset + take]
            written += take
            self._offset += take
            if self._offset >= len(chunk):
                self._chunks.pop()
                self._offset = 0
        return written


def _split_table(table: str) -> tuple[str, str]:
    schema, _, name = table.partition(".")
    if not name:
        schema, name = "ctgov", schema
    if not (_NAME_RE.match(schema) and _NAME_RE.match(name)):
        raise QueryFailed(f"not a table name: {table!r}")
    return schema, name
