"""Downloads: a DataFrame as CSV or JSON bytes (pure; the pages hand the bytes to a download button)."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import zlib
from collections.abc import Callable, Iterator
from json.encoder import encode_basestring
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
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
_FORMULA_RE = r"^[=+\-@\t\r]"  # the same starts, for pyarrow.compute (RE2)
_QUOTE_RE = r'[,"\r\n]'  # what makes Python's csv writer (pandas' to_csv) quote a cell
CSV_CHUNK_ROWS = 20_000  # rows formatted at once: memory holds one chunk's text, not the whole file's


def _inert_cell(value: Any) -> Any:
    return "'" + value if isinstance(value, str) and value.startswith(_FORMULA_START) else value


def _quoted(cells: pa.Array) -> pa.Array:
    """Cell texts as pandas' to_csv writes them: quoted (inner quotes doubled) when they hold a comma, a
    quote, a CR or a LF."""
    escaped = pc.binary_join_element_wise('"', pc.replace_substring(cells, '"', '""'), '"', "")
    return pc.if_else(pc.match_substring_regex(cells, _QUOTE_RE), escaped, cells)


def _text_cells(values: list[Any] | pa.Array) -> pa.Array:
    """CSV cells of a text column, vectorised: a formula start gets the OWASP ' prefix, missing is empty."""
    cells = values if isinstance(values, pa.Array) else pa.array(values, type=pa.string(), from_pandas=True)
    formula = pc.match_substring_regex(cells, _FORMULA_RE)
    inert = pc.if_else(formula, pc.binary_join_element_wise("'", cells, ""), cells)
    return _quoted(pc.fill_null(inert, ""))


def _csv_cells(col: pd.Series, date_format: str | None) -> pa.Array:
    """One column's CSV cells, exactly as pandas' to_csv wrote them after a per-cell _inert_cell map."""
    dtype = col.dtype
    if is_string_dtype(dtype) or isinstance(dtype, pd.CategoricalDtype):  # object columns count as text
        values = col.astype(object).tolist()
        with contextlib.suppress(pa.ArrowInvalid, pa.ArrowTypeError):  # not only text: cell by cell below
            return _text_cells(pa.array(values, type=pa.string(), from_pandas=True))
        # Mixed values (numbers, dates, lists among text): str() of each, as pandas does; text defused.
        return _quoted(pa.array([_mixed_cell(v, date_format) for v in values], type=pa.string()))
    if isinstance(dtype, np.dtype) and dtype.kind in "iu":  # plain integers, never missing
        return pc.cast(pa.array(col.to_numpy()), pa.string())
    # Numbers with missing values, floats, flags and timestamps: pandas' own text for them (none holds a
    # comma, quote or line break), beside a constant column so that an empty cell is never a lone field.
    pair = pd.DataFrame({"v": col.reset_index(drop=True), "z": 0})
    text = pair.to_csv(index=False, header=False, date_format=date_format, lineterminator="\n")
    lines = text.split("\n")[:-1]
    return pa.array([line[:-2] for line in lines], type=pa.string())


def _mixed_cell(value: Any, date_format: str | None) -> str:
    """A cell of a mixed column as pandas writes it: str() of the value, a timestamp in date_format."""
    if _missing(value):
        return ""
    if isinstance(value, str):
        return str(_inert_cell(value))
    return value.strftime(date_format) if date_format and isinstance(value, dt.datetime) else str(value)


def _missing(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # a list or array is a value
        return False


def _csv_lines(cells: list[pa.Array]) -> bytes:
    """Rows joined by commas and ended by CRLF, as one block of bytes."""
    if len(cells) == 1:  # Python's csv writer quotes a row whose only field is empty
        cells = [pc.if_else(pc.equal(cells[0], ""), '""', cells[0])]
    lines = pc.binary_join_element_wise(*cells, ",")
    if len(lines) == 0:
        return b""
    one = pa.ListArray.from_arrays(pa.array([0, len(lines)], type=pa.int32()), lines)
    return pc.binary_join(one, "\r\n")[0].as_buffer().to_pybytes() + b"\r\n"


def iter_csv(df: pd.DataFrame, date_format: str | None = "%Y-%m-%d",
             chunk_rows: int = CSV_CHUNK_ROWS) -> Iterator[bytes]:
    """to_csv_bytes in pieces of `chunk_rows` rows (the header first), for a streamed download."""
    if df.shape[1] == 0:  # no columns: pandas' own (rare) layout
        yield df.to_csv(index=False, lineterminator="\r\n").encode("utf-8")
        return
    yield _csv_lines([_quoted(pa.array([str(c)], type=pa.string())) for c in df.columns])
    for start in range(0, len(df), chunk_rows):
        part = df.iloc[start:start + chunk_rows]
        yield _csv_lines([_csv_cells(part.iloc[:, c], date_format) for c in range(part.shape[1])])


def to_csv_bytes(df: pd.DataFrame, date_format: str | None = "%Y-%m-%d") -> bytes:
    """UTF-8 CSV with a header row; missing values are empty cells and dates ISO (YYYY-MM-DD, or pandas' full
    ISO timestamps with date_format=None). Text cells that a spreadsheet would run as a formula (trial records
    are untrusted) start with a ' (OWASP); numbers are left alone. CRLF (RFC 4180) line ends, so that a cell
    holding a bare CR is quoted rather than splitting its row.

    The bytes of pandas' to_csv after a per-cell check, written a column at a time with pyarrow.compute (the
    per-cell check alone took a second for 66,000 trials). (pyarrow's CSV writer quotes all text.)
    """
    return b"".join(iter_csv(df, date_format))


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


VIEW_SLUG_CHARS = 30  # the longest condition text a file name carries


def view_stem(page: str, query: str, label: str | None = None) -> str:
    """A download's stem naming its page and view: `explore-trials-lung-cancer-3fa2c1` (the view's words, then
    a digest of its whole query string, so two views never share a name); just the page's stem for the default
    view."""
    if not query:
        return page
    words = "".join(c if c.isalnum() else "-" for c in (label or "").lower())
    slug = "-".join(w for w in words.split("-") if w)[:VIEW_SLUG_CHARS].strip("-")
    digest = f"{zlib.crc32(query.encode()) & 0xFFFFFF:06x}"
    return "-".join(p for p in (page, slug, digest) if p)
