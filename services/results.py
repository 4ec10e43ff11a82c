"""Posted results of one trial for its page: participant flow, baseline characteristics, primary outcomes with
their statistical analyses — AACT's results tables read and laid out one column per group."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, cast

import pandas as pd

from services.data import runtime
from services.data.db import Database, load_sql
from services.errors import TrialLandscapeError

RESULT_QUERIES = ("results_flow", "results_baseline", "results_primary_outcomes", "results_primary_analyses")


@dataclass(frozen=True)
class PrimaryOutcome:
    """One primary outcome's posted numbers: a row per class/category, a column per group; its analyses."""

    title: str
    time_frame: str
    measure: str  # e.g. "Mean (Standard Deviation), mm Hg"
    table: pd.DataFrame
    analyses: pd.DataFrame


@dataclass(frozen=True)
class TrialResults:
    """What a trial posted (empty frames / list for parts it did not post)."""

    flow: pd.DataFrame
    baseline: pd.DataFrame
    primary: tuple[PrimaryOutcome, ...]

    @property
    def any(self) -> bool:
        return not self.flow.empty or not self.baseline.empty or bool(self.primary)


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, float) and pd.isna(value)) or value is pd.NA


def _text(value: Any) -> str:
    if _blank(value):
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _range(low: str, high: str) -> str:
    """'35.0 to 45.1', or the one limit posted: 'lower limit 35.0', 'upper limit 45.1'."""
    if low and high:
        return f"{low} to {high}"
    return f"lower limit {low}" if low else f"upper limit {high}"


def _value(row: Any) -> str:
    """A measurement as posted: '12.5 (3.1)', '40.2 (35.0 to 45.1)', '40.2 (lower limit 35.0)', or the value alone.
    A range or interval (the measure's heading names it) shows its limits even when a spread is posted too."""
    value = _text(row.param_value)
    spread = _text(getattr(row, "dispersion_value", None))
    low = _text(getattr(row, "lower_limit", getattr(row, "dispersion_lower_limit", None)))
    high = _text(getattr(row, "upper_limit", getattr(row, "dispersion_upper_limit", None)))
    interval = re.search(r"range|interval", _text(getattr(row, "dispersion_type", None)), re.IGNORECASE)
    if spread and not (interval and (low or high)):
        return f"{value} ({spread})"
    if low or high:
        return f"{value} ({_range(low, high)})"
    return value


def _pivot(frame: pd.DataFrame, keys: list[str], values: pd.Series) -> pd.DataFrame:
    """Rows by `keys` (first-seen order), one column per group (first-seen order)."""
    data = frame[keys].copy()
    data["grp"] = frame["grp"].map(_text)
    data["value"] = values
    for key in keys:
        data[key] = data[key].map(_text)
    groups = list(dict.fromkeys(data["grp"]))
    rows: dict[tuple[str, ...], dict[str, str]] = {}
    for record in data.itertuples(index=False):
        row_key = tuple(str(getattr(record, k)) for k in keys)
        rows.setdefault(row_key, {})[str(record.grp)] = str(record.value)
    return pd.DataFrame([[*row_key, *(cells.get(g, "") for g in groups)] for row_key, cells in rows.items()],
                        columns=[*keys, *groups])


def _param(value: Any) -> str:
    """'COUNT_OF_PARTICIPANTS' → 'Count of participants'."""
    return _text(value).replace("_", " ").capitalize()


def _measure(param: str, dispersion: str, units: str) -> str:
    """What a column's numbers are: 'Mean (Standard Deviation), mm Hg' (the kind of the number in brackets)."""
    return ", ".join(p for p in ((f"{param} ({dispersion})" if dispersion else param).strip(), units) if p)


def trial_results(nct_id: str, db: Database | None = None) -> TrialResults:
    """The posted results of one trial (the queries run concurrently)."""
    db = db or runtime.get_db()
    frames = db.fetch_many({name: (load_sql(name), {"nct_id": nct_id}) for name in RESULT_QUERIES})
    for value in frames.values():
        if isinstance(value, TrialLandscapeError):
            raise value
    flow_rows, base_rows, out_rows, ana_rows = (cast(pd.DataFrame, frames[name]) for name in RESULT_QUERIES)

    flow = pd.DataFrame()
    if not flow_rows.empty:
        flow = _pivot(flow_rows, ["period", "milestone"], flow_rows["count"].map(_text))
        flow.columns = ["Period", "Milestone", *flow.columns[2:]]

    baseline = pd.DataFrame()
    if not base_rows.empty:
        base_rows = base_rows.assign(
            row=[" · ".join(p for p in (_text(c), _text(k)) if p) for c, k in
                 zip(base_rows["classification"], base_rows["category"], strict=True)],
            unit=[_measure(_param(t), _param(d), _text(u)) for t, d, u in
                  zip(base_rows["param_type"], base_rows["dispersion_type"], base_rows["units"], strict=True)])
        baseline = _pivot(base_rows, ["measure", "unit", "row"],
                          pd.Series([_value(r) for r in base_rows.itertuples()], index=base_rows.index))
        baseline.columns = ["Characteristic", "Measure", "Category", *baseline.columns[3:]]

    primary: list[PrimaryOutcome] = []
    for outcome_id, rows in out_rows.groupby("outcome_id", sort=False):
        first = rows.iloc[0]
        measured = rows[rows["grp"].map(lambda g: not _blank(g))]
        table = pd.DataFrame()
        if not measured.empty:
            measured = measured.assign(row=[" · ".join(p for p in (_text(c), _text(k)) if p) or "—" for c, k in
                                            zip(measured["classification"], measured["category"], strict=True)])
            table = _pivot(measured, ["row"], pd.Series([_value(r) for r in measured.itertuples()],
                                                        index=measured.index))
            table.columns = ["", *table.columns[1:]]
        analyses = ana_rows[ana_rows["outcome_id"] == outcome_id]
        shown = pd.DataFrame({
            "Groups": analyses["groups"].map(_text),
            "Method": analyses["method"].map(_text),
            "Estimate": [" ".join(p for p in (_text(t), _text(v)) if p) for t, v in
                         zip(analyses["param_type"], analyses["param_value"], strict=True)],
            "Confidence interval": [(f"{_text(pct)}% " if _text(pct) else "") + _range(_text(lo), _text(hi))
                                    if not _blank(lo) or not _blank(hi) else ""
                                    for pct, lo, hi in zip(analyses["ci_percent"], analyses["ci_lower_limit"],
                                                           analyses["ci_upper_limit"], strict=True)],
            "p-value": analyses["p_value_raw"].map(_text),
        })
        measure = _measure(_param(first["param_type"]), _text(first["dispersion_type"]), _text(first["units"]))
        primary.append(PrimaryOutcome(title=_text(first["title"]), time_frame=_text(first["time_frame"]),
                                      measure=measure, table=table, analyses=shown.reset_index(drop=True)))
    return TrialResults(flow=flow, baseline=baseline, primary=tuple(primary))
