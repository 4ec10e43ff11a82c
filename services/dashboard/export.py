"""Downloads: a DataFrame as CSV or JSON bytes (pure; the pages hand the bytes to a download button)."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
from collections.abc import Callable
from json.encoder import encode_basestring
from typing import Any

import pandas as pd
from pandas.api.types import is_numeric_dtype, is_string_dtype

FORMATS = {"csv": "text/csv", "json": "application/json"}


def _plain(value: Any) -> Any:
    """A JSON-ready scalar: dates as ISO text, missing values (NaT too) as None, numpy numbers as Python numbers."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    with contextlib.suppress(TypeError, ValueError):  # a value pandas cannot test is not missing
        if pd.isna(value):
            return None
    if isinstance(value, dt.date):  # datetimes and pandas Timestamps too
        return value.isoformat()
    if hasattr(value, "item") and not isinstance(value, (dict, str, bytes)):
        return _plain(value.item())
    return value


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # what Excel and LibreOffice read as the start of a formula


def _inert_cell(value: Any) -> Any:
    return "'" + value if isinstance(value, str) and value.startswith(_FORMULA_START) else value


def to_csv_bytes(df: pd.DataFrame, date_format: str | None = "%Y-%m-%d") -> bytes:
    """UTF-8 CSV with a header row; missing values are empty cells and dates ISO (YYYY-MM-DD, or pandas' full ISO
    timestamps with date_format=None). Text cells that a spreadsheet would run as a formula (trial records are
    untrusted) start with a ' (OWASP); numbers are left alone."""
    text = [c for c, d in enumerate(df.dtypes) if is_string_dtype(d) or isinstance(d, pd.CategoricalDtype)]
    if text:
        df = df.copy()
        for c in text:
            df.isetitem(c, df.iloc[:, c].map(_inert_cell))
    # CRLF (RFC 4180) line ends, so that a cell holding a bare CR is quoted rather than splitting its row
    return df.to_csv(index=False, date_format=date_format, lineterminator="\r\n").encode("utf-8")


def _json_float(value: float) -> str:
    if value != value:  # NaN: missing
        return "null"
    return float.__repr__(value) if math.isfinite(value) else ("Infinity" if value > 0 else "-Infinity")


# The types json's C encoder writes as json.dumps(indent=1) does, and the JSON text of common values one by one.
_PLAIN_TYPES = {str, int, float, bool, type(None)}
_SCALAR_JSON: dict[type, Callable[[Any], str]] = {
    str: encode_basestring, int: int.__repr__, float: _json_float, bool: lambda b: "true" if b else "false",
    type(None): lambda _: "null", dt.date: lambda d: f'"{d.isoformat()}"', dt.datetime: lambda d: f'"{d.isoformat()}"',
}


def _json_text(value: Any) -> str:
    # A list value sits two levels deep in the output: indent its lines to match json.dumps(indent=1).
    return json.dumps(_plain(value), ensure_ascii=False, indent=1).replace("\n", "\n  ")


def _json_column(col: pd.Series) -> list[str]:
    """Each value's JSON text, as _plain makes it. A column of plain scalars is written by json's C encoder in one
    call with a newline between values (JSON text never holds a raw newline); other columns value by value."""
    typed = col.dtype != object and (is_string_dtype(col.dtype) or is_numeric_dtype(col.dtype))
    values = (col.astype(object).where(col.notna(), None) if typed else col).tolist()  # typed: NaN/NA → None
    kinds = set(map(type, values))
    if kinds <= _PLAIN_TYPES and (typed or float not in kinds):  # (an object column's NaN must become null)
        return json.dumps(values, ensure_ascii=False, separators=("\n", ":"))[1:-1].split("\n")
    return [_SCALAR_JSON.get(type(v), _json_text)(v) for v in values]


def to_json_bytes(df: pd.DataFrame) -> bytes:
    """UTF-8 JSON: a list of one object per row, keys in column order; missing values are null.

    The same bytes as json.dumps(records, ensure_ascii=False, indent=1), written a column at a time (json's
    indenting encoder is pure Python and took seconds for an export of 66,000 trials).
    """
    if len(df) == 0:
        return b"[]"
    index = {str(k): i for i, k in enumerate(df.columns)}  # a repeated name keeps its first place, last value
    columns = [_json_column(df.iloc[:, i]) for i in index.values()]
    # One object per row: '%s' for each value; a '%' in a column name is escaped for the % operator.
    row = " {\n" + ",\n".join("  " + encode_basestring(k).replace("%", "%%") + ": %s" for k in index) + "\n }"
    if not columns:
        return ("[\n" + ",\n".join([" {}"] * len(df)) + "\n]").encode("utf-8")
    return ("[\n" + ",\n".join([row % values for values in zip(*columns, strict=True)]) + "\n]").encode("utf-8")


def to_bytes(df: pd.DataFrame, fmt: str) -> bytes:
    """The frame in a named format ("csv" or "json")."""
    if fmt == "csv":
        return to_csv_bytes(df)
    if fmt == "json":
        return to_json_bytes(df)
    raise ValueError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")


def file_name(stem: str, fmt: str, when: dt.date | None = None) -> str:
    """A download file name like trials-2026-11-21.csv (stem reduced to safe characters)."""
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in stem).strip("-") or "export"
    return f"{safe}-{(when or dt.date.today()).isoformat()}.{fmt}"
