"""Trial search over the database: lists for widgets, matching trials, one trial's details."""

from __future__ import annotations

from typing import Any

import pandas as pd

from services import runtime
from services.db import Database, load_sql
from services.filters import Filters, distance_sql


def country_names(db: Database | None = None) -> list[str]:
    """Countries that have studies, most studies first."""
    db = db or runtime.get_db()
    return [str(r["name"]) for r in db.fetch_rows(load_sql("country_names"))]


# Sortable columns of the trials table: name → SQL expression (never user text).
SORTS: dict[str, str] = {
    "nct_id": "s.nct_id", "title": "s.brief_title", "phase": "s.phase", "status": "s.overall_status",
    "lead_sponsor": "sp.name", "enrollment": "s.enrollment", "start_date": "s.start_date", "sites": "sites",
    "nearest_miles": "nd.nearest_miles",
}
EXPORT_CAP = 100_000


def _near_cte(f: Filters, params: dict[str, Any]) -> str:
    place = f.place()
    if place is None:
        return ", near_d AS (SELECT NULL::varchar AS nct_id, NULL::float8 AS nearest_miles WHERE false)"
    # The nearest site at any distance; no bounding box here, because near_sql's parameters (box, radius)
    # are shared with the filter's own near clause in the same statement and must keep the filter's radius.
    params.update({"near_lat": place.lat, "near_lon": place.lon})
    return (", near_d AS (SELECT f.nct_id, min(" + distance_sql("f") + ") AS nearest_miles "
            "FROM m JOIN ctgov.facilities f ON f.nct_id = m.nct_id "
            "WHERE f.latitude IS NOT NULL AND f.longitude IS NOT NULL GROUP BY f.nct_id)")


def matching_trials(f: Filters, *, sort: str = "start_date", descending: bool = True, limit: int = 50,
                    offset: int = 0, db: Database | None = None) -> pd.DataFrame:
    """One page of the trials matching a filter, sorted by a whitelisted column."""
    from services.stats import matched_cte

    db = db or runtime.get_db()
    cte, params = matched_cte(f)
    params = dict(params)
    order = SORTS.get(sort, SORTS["start_date"])
    direction = "DESC NULLS LAST" if descending else "ASC NULLS LAST"
    params.update({"limit": max(1, min(int(limit), EXPORT_CAP)), "offset": max(0, int(offset))})
    sql = (f"{cte}{_near_cte(f, params)}\n{load_sql('trials_page')}\n"
           f"ORDER BY {order} {direction}, s.nct_id LIMIT :limit OFFSET :offset")
    return db.fetch_df(sql, params, timeout_ms=60_000)


def count_trials(f: Filters, *, db: Database | None = None) -> int:
    """How many trials match a filter."""
    from services.stats import matched_cte

    db = db or runtime.get_db()
    cte, params = matched_cte(f)
    return int(db.fetch_value(f"{cte} SELECT count(*) FROM m", params))
