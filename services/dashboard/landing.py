"""What a first visitor's pages show before any filter is chosen, kept in the database with its generation
(app.landing, sql/schema/070_app_landing.sql): the dashboard of the default filters (Home and Explore) and the
sidebar's list of countries.

The in-process engine computes both in a fraction of a second once its arrays are in memory, but a server whose
start cache is missing or stale loads them for ~20 s at 575,000 studies, and SQL takes ~25 s for the dashboard's
22 facets (and seconds for the countries) meanwhile. So whenever the in-process engine computes one of these for a
generation, it stores it here (once per generation; the importer's prepare_after_import does it right after an
import), and a server that is still getting ready answers from it: the same numbers, from the same generation of
the data.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from services.data.db import Database, load_sql
from services.errors import TrialLandscapeError

if TYPE_CHECKING:
    from services.dashboard.engine import DashboardFrames

COUNTRY_NAMES = "country_names"
_log = logging.getLogger(__name__)
_saved: set[tuple[str, str, str]] = set()  # (database, generation, name) stored by this process
_lock = threading.Lock()


def dashboard_name(specs: Mapping[str, Mapping[str, Any]]) -> str:
    """The name of the default filters' dashboard under these facet definitions (a digest of them: frames stored
    for other definitions, by an older release, never answer)."""
    return "dashboard-" + hashlib.sha256(json.dumps(specs, sort_keys=True, default=str).encode()).hexdigest()[:16]


@functools.cache
def release() -> str:
    """A digest of the code that computes the landing values (services/dashboard, services/data and the SQL): values
    stored by another release never answer, though the data's generation is the same (a fixed count shows at once)."""
    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    code = [*root.joinpath("services", "dashboard").glob("*.py"), *root.joinpath("services", "data").rglob("*.py")]
    for path in sorted([*code, *root.joinpath("sql").rglob("*.sql")]):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _scalar(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else str(value)


def encode(frames: DashboardFrames) -> dict[str, Any]:
    """The frames as JSON: KPIs, funnel and each facet's columns, dtypes and rows (missing values as null)."""
    raw = {name: {"columns": [str(c) for c in df.columns], "dtypes": [str(t) for t in df.dtypes],
                  "rows": df.astype(object).where(df.notna(), None).to_numpy().tolist()}
           for name, df in frames.raw.items()}
    return {"kpis": frames.kpis, "funnel": frames.funnel, "raw": raw}


def decode(data: Mapping[str, Any]) -> DashboardFrames:
    from services.dashboard.engine import DashboardFrames

    raw = {name: pd.DataFrame(part["rows"], columns=part["columns"]).astype(dict(zip(part["columns"], part["dtypes"],
                                                                                      strict=True)))
           for name, part in data["raw"].items()}
    funnel = None if data["funnel"] is None else {k: int(v) for k, v in data["funnel"].items()}
    return DashboardFrames({k: int(v) for k, v in data["kpis"].items()}, funnel, raw, {})


def load(db: Database, stamp: str | None, name: str) -> Any:
    """The value stored under `name` for this generation, or None (none stored, another generation, unreadable)."""
    if not stamp:
        return None
    try:
        text = db.fetch_value(load_sql("landing_get"), {"stamp": stamp, "name": f"{name}@{release()}"},
                              timeout_ms=5_000)
        return None if text is None else json.loads(str(text))
    except (TrialLandscapeError, ValueError) as err:  # an older schema, no right to read it: compute instead
        _log.warning("could not read the stored landing value %s: %s", name, err)
        return None


def save(db: Database, stamp: str | None, name: str, value: Any) -> None:
    """Store a value of this generation unless this process already did (or the database is read-only). Failures
    are logged: without it, a start only waits longer."""
    key = (db.url, stamp or "", name)
    if not stamp or db.read_only or key in _saved:
        return
    with _lock:
        if key in _saved:
            return
        try:
            db.execute(load_sql("landing_put"), {"stamp": stamp, "name": f"{name}@{release()}",
                                                 "value": json.dumps(value, default=_scalar)})
        except TrialLandscapeError as err:
            _log.warning("could not store the landing value %s: %s", name, err)
            return
        _saved.add(key)


def load_dashboard(db: Database, stamp: str | None, specs: Mapping[str, Mapping[str, Any]]) -> DashboardFrames | None:
    """The default filters' dashboard stored for this generation and these facet definitions, or None."""
    data = load(db, stamp, dashboard_name(specs))
    try:
        return None if data is None else decode(data)
    except (KeyError, TypeError, ValueError) as err:  # a damaged value: compute instead
        _log.warning("could not read the stored landing dashboard: %s", err)
        return None
