"""The vectorised CSV writer (services/dashboard/export.py) against the per-cell writer it replaced."""

from __future__ import annotations

import datetime as dt
import io
import random
from typing import Any

import numpy as np
import pandas as pd
from pandas.api.types import is_string_dtype

from services.dashboard import export, trialview
from services.dashboard.filters import Filters


def _per_cell_csv(df: pd.DataFrame, date_format: str | None = "%Y-%m-%d") -> bytes:
    """The writer before pyarrow (kept here only as the oracle): pandas' to_csv after a Python check of
    each text cell."""
    text = [c for c, d in enumerate(df.dtypes) if is_string_dtype(d) or isinstance(d, pd.CategoricalDtype)]
    if text:
        df = df.copy()
        for c in text:
            df.isetitem(c, df.iloc[:, c].map(export._inert_cell))
    return df.to_csv(index=False, date_format=date_format, lineterminator="\r\n").encode("utf-8")


def _frames() -> list[pd.DataFrame]:
    return [
        pd.DataFrame({"nct_id": ["NCT1", "NCT2"], "n": [1.5, None], "d": [dt.date(2020, 1, 2), None],
                      "t": ['comma, "quote"\nnext', "ü\u2028<b>"], "b": [True, False], "i": [3, -4]}),
        pd.DataFrame({"a,s": [[1, "x", [2, {"k": None}]], []], "%": [float("inf"), float("nan")],
                      "w": [np.int64(7), pd.NA], "s": pd.Series(["a", None], dtype="str"),
                      "ts": pd.to_datetime(["2020-01-01 05:06", None]),
                      "o": [dt.datetime(2020, 1, 1, 5), {"k": 1}]}),
        pd.DataFrame({"m": [float("nan"), "s"], "nb": pd.Series([True, None], dtype="boolean"),
                      "c": pd.Categorical(["=x", None]), "none": [None, None], "f": [0.1, 1e20],
                      "I": pd.array([None, -3], dtype="Int64"), "u": np.array([1, 2], dtype=np.uint8)}),
        pd.DataFrame([[1, 2], [3, 4]], columns=["a", "a"]), pd.DataFrame(index=range(2)),
        pd.DataFrame({"a": []}),
        pd.DataFrame({"one": ["", None, "x", "=1"]}), pd.DataFrame({"one": [1.5, None]}),
    ]


def test_export_csv_is_byte_for_byte_the_per_cell_writer() -> None:
    for df in _frames():
        for date_format in ("%Y-%m-%d", None):
            expected = _per_cell_csv(df, date_format)
            assert export.to_csv_bytes(df, date_format) == expected, df.columns.tolist()


def test_export_csv_random_text_is_quoted_and_defused_as_before() -> None:
    rng = random.Random(41)
    alphabet = ["=", "+", "-", "@", "\t", "\r", "\n", ",", '"', "'", " ", "a", "é", "\u2028", "1"]
    cells: list[Any] = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6))) for _ in range(3000)]
    cells[::17] = [None] * len(cells[::17])
    mixed = [c if i % 5 else i for i, c in enumerate(cells)]
    df = pd.DataFrame({"t": cells, "n": range(len(cells)), "o": mixed})
    assert export.to_csv_bytes(df) == _per_cell_csv(df)
    chunks = list(export.iter_csv(df, chunk_rows=700))
    assert len(chunks) == 1 + 5 and b"".join(chunks) == _per_cell_csv(df)  # header, then 700-row pieces


def test_export_csv_prefixes_each_formula_start_per_column() -> None:
    starts = ["=", "+", "-", "@", "\t", "\r"]
    df = pd.DataFrame({"t": [s + "1" for s in starts] + ["a=1", "1-2"],
                       "s": pd.Series([s + "x" for s in starts] + ["x", None], dtype="str")})
    back = pd.read_csv(io.BytesIO(export.to_csv_bytes(df)), keep_default_na=False, dtype=str)
    assert back["t"].tolist() == ["'" + s + "1" for s in starts] + ["a=1", "1-2"]
    assert back["s"].tolist() == ["'" + s + "x" for s in starts] + ["x", ""]


def test_export_csv_of_the_sample_export_is_unchanged(db: Any) -> None:
    rows = trialview.export_rows(Filters(status=()), "start_date", True)
    assert len(rows) > 100
    assert export.to_csv_bytes(rows) == _per_cell_csv(rows)
