"""One import, one transaction: a connection held across many statements and COPYs while a file streams in.

`session(db)` begins a transaction on one pooled connection, takes the importers' advisory lock (imports run
one at a time) and yields a `Session`; the caller reads its input in batches and sends each through the same
session, so memory holds one batch and the database sees the whole import or nothing. Any exception — a
refused value, Ctrl-C, a killed process (the server drops the connection) — rolls everything back."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import IO, Any

from services.data.db import IMPORT_LOCK_KEY, Database, run_sync, run_typed


class Session:
    """Statements, fetches and COPYs on the held connection, inside its transaction."""

    def __init__(self, pg: Any) -> None:
        self._pg = pg

    def _run(self, coro: Any) -> Any:
        return run_typed(coro)

    def execute(self, sql: str, *args: Any) -> str:
        """Run one statement (positional $n parameters); its status line ("DELETE 12")."""
        return str(self._run(self._pg.execute(sql, *args)))

    def fetch(self, sql: str, *args: Any) -> list[dict[str, Any]]:
        """Rows of one query as dicts."""
        return [dict(r) for r in self._run(self._pg.fetch(sql, *args))]

    def copy_records(self, schema: str, table: str, columns: Sequence[str],
                     records: Sequence[Sequence[Any]]) -> int:
        """COPY Python values into a table; rows copied."""
        if records:
            self._run(self._pg.copy_records_to_table(table, schema_name=schema, columns=list(columns),
                                                     records=records))
        return len(records)

    def copy_csv(self, table: str, columns: Sequence[str], source: IO[bytes], *,
                 schema: str | None = None) -> int:
        """COPY `|`-delimited CSV (no header, empty = NULL) read from `source` in chunks; rows copied."""
        status = self._run(self._pg.copy_to_table(table, schema_name=schema, columns=list(columns),
                                                  source=source,
                                                  format="csv", delimiter="|", header=False, null=""))
        return int(str(status).split()[-1])


@contextlib.contextmanager
def session(db: Database, *, timeout_ms: int = 6 * 3_600_000) -> Iterator[Session]:
    """A transaction on one held connection: committed when the block ends, rolled back on any exception."""
    conn, pg = run_sync(db.hold_connection())
    failed = True
    try:
        run_sync(pg.execute("BEGIN"))
        run_sync(pg.execute("SELECT set_config('statement_timeout', $1, true)", str(int(timeout_ms))))
        run_sync(pg.execute("SELECT pg_advisory_xact_lock($1)", IMPORT_LOCK_KEY))
        yield Session(pg)
        Session(pg).execute("COMMIT")
        failed = False
    finally:
        if failed:
            _abandon(conn, pg)
        else:
            run_sync(conn.close())


def _abandon(conn: Any, pg: Any) -> None:
    """Drop the connection: the server rolls the transaction back, even mid-COPY (an interrupted caller may
    have left a statement running on it, so a ROLLBACK could not be sent)."""
    async def drop() -> None:
        pg.terminate()
        with contextlib.suppress(Exception):  # the pool forgets the dead connection; nothing else to undo
            await conn.invalidate()
            await conn.close()

    with contextlib.suppress(Exception):
        run_sync(drop(), timeout=30)
