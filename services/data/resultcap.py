"""Caps of console results: the SQL that makes the server measure each value, the keeper of the byte caps, and
the fetch loop that holds a result to them, to the row cap and to the whole query's deadline.

A console result is capped per value and in total. A query is wrapped so that PostgreSQL measures each value's
text before the row is sent (`measured_sql`), so no more than the caps ever leave the server. EXPLAIN cannot be
wrapped (it is no subquery): its plan lines are measured here as they arrive, under the same caps, so a plan of
a 100 kB query (every node repeats its expressions) is cut like any other result.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, NoReturn

from services.errors import QueryTimeout, ResultTooLarge


def measured_sql(sql: str, width: int, max_bytes: int | None, max_value_bytes: int | None) -> str:
    """The query wrapped so the server measures each value before sending it.

    Columns are renamed by position (q(c1, …)), so duplicate or odd names do not matter; OFFSET 0 keeps the
    query from being merged into the wrapper, so each value is computed once. A value over the per-value cap
    is replaced by NULL before anything else sees it, and its column number travels in `over_value`; a running
    total of the rows' text size hides (NULLs) every row past the total cap. So at most the caps ever leave
    the server. The caps are integers written in here, never user text. Each row ends with three extra
    columns: the biggest value's size, the number of the column over the per-value cap (or NULL), the total.
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


def size_text(n: int) -> str:
    """A byte count for a message: 1.5 MB, 20 kB, 12 bytes."""
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB" if n >= 1e3 else f"{n} bytes"


class Meter:
    """Keeps rows within the byte caps, in the order they arrive.

    `server=True`: rows come from `measured_sql` and carry their sizes; else (EXPLAIN) each value's text is
    measured here, as the server would measure it.
    """

    def __init__(self, columns: Sequence[str], max_bytes: int | None, max_value_bytes: int | None, *,
                 server: bool) -> None:
        self.columns = list(columns)
        self.max_bytes = max_bytes
        self.max_value_bytes = max_value_bytes
        self.server = server
        self.total = 0

    def keep(self, record: Sequence[Any]) -> tuple[Any, ...] | None:
        """The row's own values while the running total stays within max_bytes, else None (stop there);
        ResultTooLarge for a value over max_value_bytes."""
        width = len(self.columns)
        if self.server:
            biggest, over_value, total = record[width], record[width + 1], record[width + 2]
            if over_value is not None:
                self._too_large(over_value - 1, biggest)
        else:
            sizes = [_text_bytes(value) for value in record]
            for position, size in enumerate(sizes):
                if self.max_value_bytes is not None and size > self.max_value_bytes:
                    self._too_large(position, size)
            total = self.total + sum(sizes)
        self.total = int(total)
        if self.max_bytes is not None and self.total > self.max_bytes:
            return None
        return tuple(record)[:width]

    def _too_large(self, position: int, size: int) -> NoReturn:
        raise ResultTooLarge(
            f"A value in column {self.columns[position]!r} is {size_text(size)}, over the console's limit of "
            f"{size_text(self.max_value_bytes or 0)} per value; the query was stopped.")


def _text_bytes(value: Any) -> int:
    """Size of a value's text in UTF-8, as octet_length(value::text) gives it for plan lines (text, json, xml)."""
    if value is None:
        return 0
    return len((value if isinstance(value, str) else str(value)).encode("utf-8", "surrogatepass"))


async def collect(pg: Any, cursor: Any, meter: Meter | None, max_rows: int,
                  deadline: float) -> tuple[list[tuple[Any, ...]], str]:
    """Fetch a console cursor's rows (an asyncpg connection and cursor) in batches, each batch with what is left
    of the deadline, keeping them within the row cap and the meter's byte caps: (rows, truncated)."""
    rows: list[tuple[Any, ...]] = []
    # Small first batches: with byte caps a row may be up to the cap, so grow only as rows prove small.
    batch_size = 20 if meter is not None else 500
    while True:
        left_ms = int((deadline - time.monotonic()) * 1000)
        if left_ms <= 0:
            raise QueryTimeout("The query ran past its time limit and was cancelled.")
        await pg.execute(f"SET LOCAL statement_timeout = {max(1, left_ms)}")
        batch = await cursor.fetch(min(batch_size, max_rows + 1 - len(rows)))
        for record in batch:
            if len(rows) == max_rows:  # the row past the cap only tells that there are more
                return rows, "rows"
            row = tuple(record) if meter is None else meter.keep(record)
            if row is None:
                return rows, "bytes"
            rows.append(row)
        if not batch:
            return rows, ""
        batch_size = min(500, batch_size * 2)
