"""The landing view's numbers kept in the database (app.landing_dashboard, sql/schema/070_app_landing.sql).

The dashboard of the default filters is what every first visitor sees (Home and Explore). The in-process engine
computes it in a fraction of a second once its arrays are in memory, but a server whose start cache is missing or
stale loads them for ~20 s at 575,000 studies, and SQL takes ~25 s for the same 22 facets meanwhile. So whenever
the in-process engine computes the landing view of a generation, it stores the frames here (once per generation
and set of facet definitions; the importer's prepare_after_import does it too), and a server that is still
getting ready answers the landing view from them: the same numbers, from the same generation of the data.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from services.data.db import Database, load_sql
from services.errors import TrialLandscapeError

if TYPE_CHECKING:
    from services.dashboard.engine import DashboardFrames

_log = logging.getLogger(__name__)
_saved: set[tuple[str, str, str]] = set()  # (database, generation, specs) stored by this process
_lock = threading.Lock()


def specs_key(specs: Mapping[str, Mapping[str, Any]]) -> str:
    """A digest of the facet definitions: frames stored for other definitions (an older release) never answer."""
    return hashlib.sha256(json.dumps(specs, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _scalar(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else str(value)


def encode(frames: DashboardFrames) -> str:
    """The frames as JSON: KPIs, funnel and each facet's columns, dtypes and rows (missing values as null)."""
    raw = {name: {"columns": [str(c) for c in df.columns], "dtypes": [str(t) for t in df.dtypes],
                  "rows": df.astype(object).where(df.notna(), None).to_numpy().tolist()}
           for name, df in frames.raw.items()}
    return json.dumps({"kpis": frames.kpis, "funnel": frames.funnel, "raw": raw}, default=_scalar)


def decode(text: str) -> DashboardFrames:
    from services.dashboard.engine import DashboardFrames

    data = json.loads(text)
    raw = {name: pd.DataFrame(part["rows"], columns=part["columns"]).astype(dict(zip(part["columns"], part["dtypes"],
                                                                                      strict=True)))
           for name, part in data["raw"].items()}
    funnel = None if data["funnel"] is None else {k: int(v) for k, v in data["funnel"].items()}
    return DashboardFrames({k: int(v) for k, v in data["kpis"].items()}, funnel, raw, {})


def load(db: Database, stamp: str | None, specs: Mapping[str, Mapping[str, Any]]) -> DashboardFrames | None:
    """The stored landing dashboard of this generation, or None (none stored, another generation, unreadable)."""
    if not stamp:
        return None
    try:
        text = db.fetch_value(load_sql("landing_dashboard_get"), {"stamp": stamp, "specs": specs_key(specs)},
                              timeout_ms=5_000)
        return None if text is None else decode(str(text))
    except (TrialLandscapeError, ValueError, KeyError, TypeError) as err:  # an older schema, a damaged row: compute
        _log.warning("could not read the stored landing dashboard: %s", err)
        return None


def save(db: Database, stamp: str | None, specs: Mapping[str, Mapping[str, Any]], frames: DashboardFrames) -> None:
    """Store the landing dashboard of this generation unless this process already did (or it has errors, or the
    database is read-only). Failures are logged: without it, a start only waits longer."""
    key = (db.url, stamp or "", specs_key(specs))
    if not stamp or frames.errors or db.read_only or key in _saved:
        return
    with _lock:
        if key in _saved:
            return
        try:
            db.execute(load_sql("landing_dashboard_put"), {"stamp": stamp, "specs": key[2], "frames": encode(frames)})
        except TrialLandscapeError as err:
            _log.warning("could not store the landing dashboard: %s", err)
            return
        _saved.add(key)

