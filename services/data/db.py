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

from services.errors import (
    DatabaseUnavailable,
    QueryFailed,
    QueryTimeout,
    ResultTooLarge,
    TrialLandscapeError,
)

SQL_DIR = Path(__file__).resolve().parents[2] / "sql"
DEFAULT_TIMEOUT_MS = 15_000
MAX_POOL = 5
T = TypeVar("T")

# SQLSTATE classes/codes that mean "the server is not there (now)".
_UNAVAILABLE_CODES = {"57P01", "57P02", "57P03", "53300", "3D000"}
_NAME_RE = re.compile(r"^[a-z_][a-z0-9_]*$")
IMPORT_LOCK_KEY = 7_310_001  # the advisory lock replace_rows takes, so imports run one at a time


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
        self._engine_lock = threading.Lock()
        atexit.register(self.close)

    # ---- engine lifecycle -------------------------------------------------------------
    def _get_engine(self) -> AsyncEngine:
        with self._engine_lock:
            if self._engine is None:
                # Every statement is planned for its own values: asyncpg prepares statements, and after five runs
                # PostgreSQL may switch one to a generic plan that ignores them; for an id list (unnest of a
                # parameter, estimated at 10 rows) that plan took the relevance order at 575,000 studies from 1 s
                # past its 60 s limit. Planning costs about a millisecond here.
                settings = {"application_name": "trial-landscape", "plan_cache_mode": "force_custom_plan"}
                if self.read_only:
                    settings["default_transaction_read_only"] = "on"
                self._engine = create_async_engine(
                    to_async_url(self.url),
                    pool_size=self.pool_size,
                    max_overflow=0,
                    pool_timeout=20,
                    pool_pre_ping=True,
                    pool_recycle=1800,
                    connect_args={"server_settings": settings, "timeout": 10, "command_timeout": None},
                )
            return self._engine

    def close(self) -> None:
        """Close the pool (before the embedded server stops, so exit is quiet)."""
        with self._engine_lock:
            engine, self._engine = self._engine, None
        if engine is not None and _loop is not None and _loop.thread.is_alive():
            with contextlib.suppress(Exception):  # closing a broken pool must not mask the real exit reason
                run_sync(engine.dispose(), timeout=10)

    # ---- core execution ---------------------------------------------------------------
    async def _in_transaction(self, fn: Callable[[AsyncConnection], Awaitable[T]], timeout_ms: int | None,
                              write: bool = False) -> T:
        if write and self.read_only:
            raise QueryFailed("This database is connected read-only; nothing can be written to it.")
        engine = self._get_engine()
        try:
            async with engine.connect() as conn, conn.begin():
                limit = self.statement_timeout_ms if timeout_ms is None else timeout_ms
                await conn.execute(text("SELECT set_config('statement_timeout', :t, true)"),
                                   {"t": str(int(limit))})
                return await fn(conn)
        except TrialLandscapeError:
            raise
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
        """
        if role is not None and not _NAME_RE.match(role):
            raise QueryFailed(f"not a role name: {role!r}")
        limit_ms = self.statement_timeout_ms if timeout_ms is None else timeout_ms
        deadline = time.monotonic() + limit_ms / 1000

        async def work(conn: AsyncConnection) -> tuple[list[str], list[tuple[Any, ...]], str]:
            await conn.execute(text("SET TRANSACTION READ ONLY"))
            await conn.execute(text("SELECT set_config('standard_conforming_strings', 'on', true)"))
            if search_path is not None:
                await conn.execute(text("SELECT set_config('search_path', :p, true)"), {"p": search_path})
            if role:
                await conn.execute(text(f"SET LOCAL ROLE {role}"))
            raw = await conn.get_raw_connection()
            pg: asyncpg.Connection = raw.driver_connection  # type: ignore[assignment]
            statement = await pg.prepare(sql)
            bound = list(values)
            if convert is not None:
                bound = list(convert([p.name for p in statement.get_parameters()], bound))
            columns = [a.name for a in statement.get_attributes()]
            # EXPLAIN cannot be a subquery; its rows are plan lines whose size the query text bounds.
            measured = bool(columns) and (max_bytes is not None or max_value_bytes is not None) \
                and not re.match(r"\s*explain\b", sql, re.IGNORECASE)
            if measured:
                statement = await pg.prepare(_measured_sql(sql, len(columns), max_bytes, max_value_bytes))
            cursor = await statement.cursor(*bound)
            rows: list[tuple[Any, ...]] = []
            # Small first batches: with byte caps a row may be up to the cap, so grow only as rows prove small.
            batch_size = 20 if measured else 500
            while len(rows) <= max_rows:
                left_ms = int((deadline - time.monotonic()) * 1000)
                if left_ms <= 0:
                    raise QueryTimeout("The query ran past its time limit and was cancelled.")
                await pg.execute(f"SET LOCAL statement_timeout = {max(1, left_ms)}")
                batch = await cursor.fetch(min(batch_size, max_rows + 1 - len(rows)))
                if not measured:
                    rows.extend(tuple(r) for r in batch)
                else:
                    for record in batch:
                        if len(rows) == max_rows:  # the row past the cap only tells that there are more
                            return columns, rows, "rows"
                        over_value, total = record[-2], record[-1]
                        if over_value is not None:
                            name, size = columns[over_value - 1], record[-3]
                            raise ResultTooLarge(
                                f"A value in column {name!r} is {_size(size)}, over the console's limit of "
                                f"{_size(max_value_bytes or 0)} per value; the query was stopped.")
                        if max_bytes is not None and total > max_bytes:
                            return columns, rows, "bytes"
                        rows.append(tuple(record)[:len(columns)])
                    batch_size = min(500, batch_size * 2)
                if not batch:
                    break
            truncated = "rows" if len(rows) > max_rows else ""
            return columns, rows[:max_rows], truncated

        return self._sync(self._in_transaction(work, limit_ms))

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
        unavailable = [r for r in results if isinstance(r, DatabaseUnavailable)]
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

    def reserve_ids(self, table: str, count: int) -> list[int]:
        """Take `count` fresh ids from a table's serial sequence (for rows that reference each other)."""
        schema, name = _split_table(table)
        if count <= 0:
            return []
        rows = self.fetch_rows(
            "SELECT nextval(pg_get_serial_sequence(:t, 'id')) AS id FROM generate_series(1, :n)",
            {"t": f"{schema}.{name}", "n": count},
        )
        return [int(r["id"]) for r in rows]

    def health(self) -> Health:
        """Ping the server: version, read-only flag and round-trip time; never raises."""
        started = time.perf_counter()
        try:
            row = self.fetch_rows(
                "SELECT current_setting('server_version') AS v, "
                "current_setting('transaction_read_only') AS ro", timeout_ms=5_000)[0]
            return Health(True, self.label, str(row["v"]), row["ro"] == "on" or self.read_only,
                          (time.perf_counter() - started) * 1000)
        except TrialLandscapeError as err:
            return Health(False, self.label, "", self.read_only, (time.perf_counter() - started) * 1000, str(err))


def _measured_sql(sql: str, width: int, max_bytes: int | None, max_value_bytes: int | None) -> str:
    """The query wrapped so the server measures each value before sending it.

    Columns are renamed by position (q(c1, …)), so duplicate or odd names do not matter; OFFSET 0 keeps the
    query from being merged into the wrapper, so each value is computed once. A value over the per-value cap
    is replaced by NULL before anything else sees it, and its column number travels in `over_value`; a running
    total of the rows' text size hides (NULLs) every row past the total cap. So at most the caps ever leave
    the server. The caps are integers written in here, never user text.
    """
    names = [f"c{i}" for i in range(1, width + 1)]
    value_cap = int(max_value_bytes) if max_value_bytes is not None else 2**62
    total_cap = int(max_bytes) if max_bytes is not None else 2**62
    sizes = ", ".join(f"octet_length(q.{n}::text) AS s_{n}" for n in names)
    # Oversized values become NULL below the window: the window keeps every row it has seen, so it must
    # only ever hold capped values.
    kept = ", ".join(f"CASE WHEN z.s_{n} > {value_cap} THEN NULL ELSE z.{n} END AS {n}" for n in names)
    row_bytes = " + ".join(f"least(coalesce(m.s_{n}, 0), {value_cap})" for n in names)
    biggest = f"greatest({', '.join(f'z.s_{n}' for n in names)})" if width > 1 else f"z.s_{names[0]}"
    which = "CASE " + " ".join(f"WHEN z.s_{n} > {value_cap} THEN {i}" for i, n in enumerate(names, 1)) + " END"
    size_list = ", ".join(f"z.s_{n}" for n in names)
    hidden = f"(w.over_value IS NOT NULL OR w.total > {total_cap})"
    outer = ", ".join(f"CASE WHEN {hidden} THEN NULL ELSE w.{n} END" for n in names)
    return (
        f"SELECT {outer}, w.biggest, w.over_value, w.total FROM ("
        f"SELECT m.*, sum({row_bytes}) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS total FROM ("
        f"SELECT {kept}, {size_list}, {biggest} AS biggest, {which} AS over_value FROM ("
        f"SELECT q.*, {sizes} FROM (SELECT * FROM ({sql}\n) AS q0 OFFSET 0) AS q({', '.join(names)})"
        f") AS z OFFSET 0) AS m) AS w"
    )


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB" if n >= 1e3 else f"{n} bytes"


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
