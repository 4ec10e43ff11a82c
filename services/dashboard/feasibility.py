"""Site feasibility: the facilities (grouped by services/data/sitename.py's rule) with the most matching trials, how
many recruit now, their phases, lead sponsors and investigators, and their distance from a place."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from services.dashboard.engine import Engine, engine_for
from services.dashboard.facetstore import SITE_ORDERS, SiteFrames
from services.dashboard.filters import Filters
from services.data import geo, runtime, sitename
from services.data.db import Database, load_sql
from services.data.normalize import PHASES, canonical, label
from services.inert import text

LIMIT = 200  # facility groups listed (and drawn)
ORDER_LABELS = {"trials": "Most matching trials", "recruiting": "Most recruiting now", "distance": "Nearest"}
COLUMNS = ["rank", "facility", "trials", "recruiting", "distance", "city", "state", "country", "phases", "sponsors",
           "investigators", "generic", "lat", "lon", "site_id"]


@dataclass
class SiteTable:
    """What the Sites page shows for one filter, place and order (DataFrames only: picklable for caching)."""

    filters: Filters
    place: geo.Place | None
    order: str
    rows: pd.DataFrame  # COLUMNS, in rank order
    totals: dict[str, int]  # groups, sites (named), unnamed
    has_investigators: bool  # ctgov.facility_investigators has rows here (else the page says it is empty)
    has_officials: bool  # ctgov.overall_officials has rows (per trial, not per site: not listed by site)
    engine: str = ""
    notes: list[str] = field(default_factory=list)


def site_table(f: Filters, place: geo.Place | None = None, order: str = "trials", limit: int = LIMIT,
               db: Database | None = None, engine: Engine | None = None) -> SiteTable:
    """The facility groups of the trials matching `f`, ranked by `order`, from the database's engine. The place is
    the filter's own when it has one, else the one given (or none: no distances)."""
    db = db or runtime.get_db()
    engine = engine or engine_for(db)
    place = f.place() or place
    if order not in SITE_ORDERS or (order == "distance" and place is None):
        order = "trials"
    counts = db.fetch_rows(load_sql("feasibility_people_tables"), timeout_ms=30_000)[0]
    investigators, officials = bool(counts["investigators"]), bool(counts["officials"])
    frames = engine.site_frames(f, place, order=order, limit=limit, investigators=investigators)
    return SiteTable(f, place, order, shape(db, frames, f.unit), dict(frames.totals), investigators, officials,
                     engine.kind)


def area_text(f: Filters) -> str:
    """"in Texas and within 100 mi of Boston, MA": the filter's area, whose facilities alone are listed (plain text,
    empty without one)."""
    parts = [f"in {', '.join(names)}" for names in (f.state, f.country) if names]
    if f.near:
        parts.append(f"within {f.radius:g} {f.unit} of {f.near}")
    return " and ".join(parts)


def _details(detail: pd.DataFrame, kind: str) -> dict[int, tuple[list[tuple[Any, int]], int]]:
    """Per group, one kind's (value, n) pairs as the engine ranked them, and how many values the group has."""
    part = detail[detail["kind"] == kind]
    out: dict[int, tuple[list[tuple[Any, int]], int]] = {}
    for site, value, n, of in zip(part["site_id"], part["value"], part["n"], part["of"], strict=True):
        items, _ = out.setdefault(int(site), ([], int(of)))
        items.append((None if value is None or value != value else value, int(n)))
    return out


def _phase_text(found: tuple[list[tuple[Any, int]], int] | None) -> str:
    items = found[0] if found else []
    order = {p: i for i, p in enumerate(PHASES)}
    merged: dict[str, int] = {}
    for value, n in items:  # "Phase 2" and "PHASE2" are one phase
        canon = canonical("phase", value) or ""
        merged[canon] = merged.get(canon, 0) + n
    ranked = sorted(merged.items(), key=lambda kv: (order.get(kv[0].split("/")[0], 99), kv[0]))
    return " · ".join(f"{label('phase', k) if k else 'Not given'} {n}" for k, n in ranked)


def _top_text(found: tuple[list[tuple[Any, int]], int] | None) -> str:
    if not found:
        return ""
    items, total = found
    more = total - len(items)
    return "; ".join(f"{v} ({n})" for v, n in items) + (f"; +{more} more" if more > 0 else "")


def shape(db: Database, frames: SiteFrames, unit: str = "mi") -> pd.DataFrame:
    """The engine's frames → the page's table: names and places from each group's representative facility."""
    groups = frames.groups
    if groups.empty:
        return pd.DataFrame(columns=COLUMNS)
    ids = sorted({int(i) for i in groups["site_id"]} | {int(i) for i in groups["point_id"].dropna()})
    params = {"ids": ids, "near_lat": None, "near_lon": None, "earth_miles": geo.EARTH_RADIUS_MILES}
    sites = db.fetch_df(load_sql("facetstore_site_rows"), params, timeout_ms=60_000).set_index("site_id")
    phases, sponsors, people = (_details(frames.details, k) for k in ("phase", "sponsor", "investigator"))
    factor = geo.per_mile(unit)
    rows = []
    for rank, g in enumerate(groups.to_dict("records"), start=1):
        rep = sites.loc[int(g["site_id"])]
        point = sites.loc[int(g["point_id"])] if g["point_id"] is not None and g["point_id"] == g["point_id"] else None
        miles = g["miles"]
        rows.append({
            "rank": rank, "facility": text(sitename.institution_name(rep["facility"], rep["city"])),
            "city": text(rep["city"]), "state": text(rep["state"]),
            "country": text(geo.country_display(rep["country"]) if rep["country"] else rep["country"]),
            "trials": int(g["trials"]), "recruiting": int(g["recruiting"]),
            "distance": None if miles is None or miles != miles else round(float(miles) * factor, 1),
            "phases": _phase_text(phases.get(int(g["site_id"]))),
            "sponsors": _top_text(sponsors.get(int(g["site_id"]))),
            "investigators": _top_text(people.get(int(g["site_id"]))),
            "generic": sitename.is_generic(rep["facility"]),
            "lat": None if point is None else float(point["lat"]), "lon": None if point is None else float(point["lon"]),
            "site_id": int(g["site_id"]),
        })
    return pd.DataFrame(rows, columns=COLUMNS)


def export_frame(table: SiteTable) -> pd.DataFrame:
    """The table as downloaded: the shown columns, distance named with its unit, no map coordinates' internals."""
    out = table.rows.drop(columns=["site_id"]).rename(columns={"distance": f"distance_{table.filters.unit}"})
    return out if table.place is not None else out.drop(columns=[f"distance_{table.filters.unit}"])
