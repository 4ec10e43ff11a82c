"""Downloads: a DataFrame as CSV or JSON bytes (pure; the pages hand the bytes to a download button)."""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

import pandas as pd

FORMATS = {"csv": "text/csv", "json": "application/json"}


def _plain(value: Any) -> Any:
    """A JSON-ready scalar: dates as ISO text, missing values as None, numpy numbers as Python numbers."""
    if value is None:
        return None
    if isinstance(value, (dt.date, dt.datetime, pd.Timestamp)):
        return value.isoformat()
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item") and not isinstance(value, (list, tuple, dict, str, bytes)):
        return _plain(value.item())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return value


def to_csv_bytes(df: pd.DataFrame) -> bytes:
    """UTF-8 CSV with a header row; missing values are empty cells and dates ISO (YYYY-MM-DD)."""
    return df.to_csv(index=False, date_format="%Y-%m-%d").encode("utf-8")


def to_json_bytes(df: pd.DataFrame) -> bytes:
    """UTF-8 JSON: a list of one object per row, keys in column order; missing values are null."""
    records = [{str(k): _plain(v) for k, v in zip(df.columns, row, strict=True)}
               for row in df.itertuples(index=False, name=None)]
    return json.dumps(records, ensure_ascii=False, indent=1).encode("utf-8")


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
