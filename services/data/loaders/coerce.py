"""Values of the wrong type for a column: coerced the way AACT's mapping does, or refused with the field named.

AACT assigns API values to ActiveRecord attributes, which cast them: the string "Yes"/"YES" in a boolean column
becomes true, "12" in an integer column becomes 12, a number in a text column becomes its text. We do the same
for unambiguous values; anything else (an object where a name belongs, "maybe" where a yes/no belongs) raises
FieldError naming the table and column, and the importer skips that one study with a report.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from services.data.loaders.aact_schema import TABLES


class FieldError(ValueError):
    """A value that cannot be stored in its column."""

    def __init__(self, table: str, column: str, value: Any, expected: str) -> None:
        self.table = table
        self.column = column
        self.value = value
        shown = repr(value)
        super().__init__(f"{table}.{column}: {shown[:80]}{'…' if len(shown) > 80 else ''} is not {expected}")

    @property
    def field(self) -> str:
        return f"{self.table}.{self.column}"


_TRUE = frozenset({"y", "yes", "true", "t", "1"})
_FALSE = frozenset({"n", "no", "false", "f", "0"})
_NUM_RE = re.compile(r"^\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*$")
# "22,949": a number written with thousands separators means the number.
_GROUPED_RE = re.compile(r"^\s*[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?\s*$")
# Registry entries say a number is not available this way; storing NULL keeps the study and claims nothing.
_NOT_AVAILABLE = frozenset({"na", "n/a", "nr", "nd", "not available", "not applicable", "not reported", "-", "--",
                            "none", ""})


def _number_text(table: str, column: str, value: Any, expected: str) -> str | None:
    """The text of the number `value` writes (separators removed); None for None or 'not available'.

    FieldError for anything else (not text, or text that is no number)."""
    if value is None or (isinstance(value, str) and value.strip().lower() in _NOT_AVAILABLE):
        return None  # stored as NULL
    if isinstance(value, str):
        text = value.replace(",", "") if _GROUPED_RE.match(value) else value
        if _NUM_RE.match(text):
            return text
    raise FieldError(table, column, value, expected)


def _to_bool(table: str, column: str, value: Any) -> bool:
    if isinstance(value, str) and value.strip().lower() in _TRUE:
        return True
    if isinstance(value, str) and value.strip().lower() in _FALSE:
        return False
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise FieldError(table, column, value, "a yes/no value")


def _exact(table: str, column: str, value: Any, expected: str) -> Decimal | None:
    """The number as an exact decimal (a float as it prints); None for None or 'not available'."""
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, (int, Decimal)) and not isinstance(value, bool):
        return Decimal(value)
    text = _number_text(table, column, value, expected)
    return None if text is None else Decimal(text.strip())


def _whole_number(bits: int) -> Coercer:
    """ActiveRecord's integer cast of a number, truncated ("1.70" → 1, as AACT stores frequency thresholds), for a
    column of `bits` bits: a number it cannot hold is that study's FieldError, not a failed COPY."""
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    expected = f"a whole number from {low:,} to {high:,}"

    def convert(table: str, column: str, value: Any) -> int | None:
        if isinstance(value, bool):
            return int(value)
        # A float's own value, not as it prints: 3.558849658588092e+17 is 355,884,965,858,809,216.
        exact = Decimal(value) if isinstance(value, float) else _exact(table, column, value, "a whole number")
        if exact is None:
            return None
        # Sized up before int(): int(Decimal("1e500000")) alone takes seconds.
        if not exact.is_finite() or exact.adjusted() >= len(str(high)) or not low <= int(exact) <= high:
            raise FieldError(table, column, value, expected)
        return int(exact)

    return convert


def _to_float(table: str, column: str, value: Any) -> float | None:
    if isinstance(value, (int, Decimal)) and not isinstance(value, bool):
        return float(value)
    text = _number_text(table, column, value, "a number")
    return None if text is None else float(text)


def _decimal(precision: int | None = None, scale: int = 0) -> Coercer:
    """A number for a numeric column: numeric(precision, scale), or PostgreSQL's own limits for a plain numeric
    (131,072 digits before the point, 16,383 after). A number it cannot hold is that study's FieldError, not a
    failed COPY."""
    integer_digits = 131_072 if precision is None else precision - scale
    largest = Decimal(10) ** integer_digits - Decimal(1).scaleb(-scale)
    expected = "a number" if precision is None else f"a number from -{largest:,} to {largest:,}"

    def convert(table: str, column: str, value: Any) -> int | float | Decimal | None:
        exact = _exact(table, column, value, "a number")
        if exact is None:
            return None
        stored = exact
        if exact.is_finite() and precision is not None and exact.adjusted() < integer_digits:
            stored = exact.quantize(Decimal(1).scaleb(-scale), ROUND_HALF_UP)  # as PostgreSQL rounds it
        exponent = stored.as_tuple().exponent
        if not stored.is_finite() or stored.adjusted() >= integer_digits or (isinstance(exponent, int)
                                                                               and exponent < -16_383):
            raise FieldError(table, column, value, expected)
        return value if isinstance(value, (int, float)) else exact  # a number is stored as it came

    return convert


def _to_text(table: str, column: str, value: Any) -> str:
    if isinstance(value, bool):
        return "t" if value else "f"  # ActiveRecord's text for a boolean
    if isinstance(value, (int, float, Decimal)):
        return str(value)
    if isinstance(value, date):
        return value.isoformat()
    raise FieldError(table, column, value, "text")


def _to_date(table: str, column: str, value: Any) -> date:
    from services.data.loaders.common import parse_api_date

    parsed = parse_api_date(value) if isinstance(value, str) else None
    if parsed is None:
        raise FieldError(table, column, value, "a date")
    return parsed


Coercer = Callable[[str, str, Any], Any]

# PostgreSQL type → (Python types stored as they are, converter for anything else).
_KINDS: dict[str, tuple[tuple[type, ...], Coercer]] = {
    "varchar": ((str,), _to_text),
    "text": ((str,), _to_text),
    # No type is stored as it is: every whole number is checked against the column's range.
    "integer": ((), _whole_number(32)),
    "bigint": ((), _whole_number(64)),
    "boolean": ((bool,), _to_bool),
    "date": ((date,), _to_date),
    "double precision": ((float,), _to_float),
    "numeric": ((int, float, Decimal), _decimal()),
}


def _kind(pg_type: str) -> tuple[tuple[type, ...], Coercer]:
    if numeric := re.fullmatch(r"numeric\((\d+),(\d+)\)", pg_type):  # no type is stored as it is
        return (), _decimal(int(numeric[1]), int(numeric[2]))
    return _KINDS.get(pg_type, ((object,), _to_text))


# Text PostgreSQL refuses whatever the column: a NUL character, and half of a surrogate pair (JSON can write
# "\ud800" alone, UTF-8 cannot).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")

def unstorable(text: str) -> str | None:
    """What in `text` PostgreSQL cannot store ("a NUL character", "half of a surrogate pair"), or None."""
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    return "a NUL character" if found.group() == "\x00" else "half of a surrogate pair"


# table → column → (accepted Python types, converter).
KINDS: dict[str, dict[str, tuple[tuple[type, ...], Coercer]]] = {
    table: {col: _kind(pg_type) for col, pg_type in cols} for table, cols in TABLES.items()
}


def coerce_row(table: str, columns: tuple[str, ...], values: dict[str, Any]) -> tuple[Any, ...]:
    """The row in column order, every value of its column's type (FieldError if one cannot be)."""
    kinds = KINDS[table]
    out = []
    for col in columns:
        value = values.get(col)
        if value is not None:
            accepted, convert = kinds[col]
            if type(value) not in accepted:
                value = convert(table, col, value)
            if isinstance(value, str) and (what := unstorable(value)):
                raise FieldError(table, col, value, f"text PostgreSQL can store (it holds {what})")
        out.append(value)
    return tuple(out)
