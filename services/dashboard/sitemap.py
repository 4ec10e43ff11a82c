"""Map data for a filter: site rows, aggregation, nearest sites, choropleth values, colours and the radius ring."""

from __future__ import annotations

import html
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from services.dashboard import facetstore
from services.dashboard.engine import Engine, engine_for
from services.dashboard.filters import Filters
from services.data import geo, runtime
from services.data.db import Database
from services.data.normalize import canonical, label
from services.inert import one_line, text
from services.trials import plural

GEO_DIR = Path(__file__).resolve().parents[2] / "data" / "geo"
# Above this many located sites the map draws grid cells instead of single points: the browser stays
# responsive and the page payload stays a few megabytes.
POINT_LIMIT = 10_000
NEAREST_LIMIT = 200
GRID_STEPS = facetstore.GRID_STEPS  # grid cell sizes (degrees), tried in order
MAP_TIMEOUT_MS = 30_000
TITLE_CHARS = 90

RGB = tuple[int, int, int]

# One colour per canonical status; the legend lists them in this order.
STATUS_COLOURS: dict[str, RGB] = {
    "RECRUITING": (26, 150, 65),
    "NOT_YET_RECRUITING": (44, 123, 182),
    "ENROLLING_BY_INVITATION": (123, 80, 164),
    "ACTIVE_NOT_RECRUITING": (253, 141, 60),
    "AVAILABLE": (0, 166, 166),
    "COMPLETED": (110, 110, 110),
    "SUSPENDED": (230, 171, 2),
    "TERMINATED": (215, 25, 28),
    "WITHDRAWN": (165, 0, 38),
    "UNKNOWN": (170, 170, 170),
}
OTHER_COLOUR: RGB = (190, 190, 190)
# Sequential ramp for choropleths (light to dark), interpolated on a log scale.
RAMP: tuple[RGB, ...] = ((255, 247, 188), (254, 196, 79), (236, 112, 20), (204, 76, 2), (140, 45, 4))


@dataclass(frozen=True)
class MapSummary:
    """What the map covers: sites and trials in all, with coordinates, and how they are drawn."""

    sites: int
    located: int
    trials: int
    trials_located: int
    aggregated: bool
    cell_degrees: float | None
    shown: int  # points or cells drawn
    point_limit: int = POINT_LIMIT


@dataclass
class MapData:
    """Everything the Map page draws for one filter (all DataFrames; picklable for caching)."""

    filters: Filters
    only_in_area: bool
    summary: MapSummary
    points: pd.DataFrame  # one row per site, or per grid cell when summary.aggregated
    nearest: pd.DataFrame
    countries: pd.DataFrame  # name (Natural Earth), aact_names, sites, trials
    states: pd.DataFrame  # name, sites, trials
    place: geo.Place | None
    radius_miles: float | None
    errors: dict[str, str] = field(default_factory=dict)


def map_data(f: Filters, only_in_area: bool = True, point_limit: int = POINT_LIMIT,
             nearest_limit: int = NEAREST_LIMIT, db: Database | None = None,
             timeout_ms: int = MAP_TIMEOUT_MS, engine: Engine | None = None) -> MapData:
    """Sites (or grid cells), nearest sites, and country/state values of the trials matching a filter, from the
    engine of the database (or the one given)."""
    engine = engine or engine_for(db or runtime.get_db())
    frames = engine.map_frames(f, only_in_area=only_in_area, point_limit=point_limit, nearest_limit=nearest_limit,
                               grid_steps=GRID_STEPS, timeout_ms=timeout_ms)
    points = (_shaped(frames, "cells", shape_cells, frames.points) if frames.cell is not None
              else shape_sites(frames.points, f.unit))
    s = frames.summary
    summary = MapSummary(sites=s["sites"], located=s["located"], trials=s["trials"],
                         trials_located=s["trials_located"], aggregated=frames.cell is not None,
                         cell_degrees=frames.cell, shown=len(points), point_limit=point_limit)
    nearest = frames.nearest if frames.nearest is not None else pd.DataFrame()
    place = f.place()
    return MapData(
        filters=f, only_in_area=only_in_area, summary=summary, points=points,
        nearest=shape_sites(nearest, f.unit) if len(nearest) else nearest,
        countries=_shaped(frames, "countries", country_values, frames.countries),
        states=_shaped(frames, "states", state_values, frames.states), place=place,
        radius_miles=f.radius_miles() if place is not None else None, errors=dict(frames.errors),
    )


def _shaped(frames: facetstore.MapFrames, name: str, shape: Callable[[pd.DataFrame], pd.DataFrame],
            raw: pd.DataFrame) -> pd.DataFrame:
    """shape(raw), kept in the frames' `shaped` (shared by the copies of a map the engine keeps per
    generation, the map of every trial: its 6,000 cells' tooltips are shaped once), handed out as a copy."""
    kept = frames.shaped.get(name)
    if kept is None:
        kept = frames.shaped[name] = shape(raw)
    return kept.copy()


# ---- shaping --------------------------------------------------------------------------------------
# Statuses are a handful of distinct values over thousands of map rows: each is spelled out once.
@lru_cache(maxsize=256)
def status_colour(status: str | None) -> RGB:
    """Colour of a site or trial status (any AACT spelling)."""
    return STATUS_COLOURS.get(canonical("status", status) or "", OTHER_COLOUR)


@lru_cache(maxsize=256)
def _cell_status(status: str | None) -> str:
    return canonical("status", status) or "UNKNOWN"


@lru_cache(maxsize=256)
def _where(city: Any, state: Any, country: Any) -> str:
    return ", ".join(p for p in (text(city), text(state), text(country)) if p)


def shape_sites(df: pd.DataFrame, unit: str = "mi") -> pd.DataFrame:
    """Site rows with their shown status (the site's own, else the trial's), colour and tooltip lines (the distance,
    from the `miles` column, in `unit`: "mi" or "km")."""
    if df.empty:
        added = ("status", "status_from", "color", "weight", "t_title", "t_sub", "t_l1", "t_l2")
        return df.assign(**{col: pd.Series(dtype=object) for col in added})
    out = df.copy()
    cols = {c: out[c].tolist() for c in ("site_status", "trial_status", "facility", "city", "state", "country",
                                         "nct_id", "title")}  # lists: iterating text columns cell by cell is slow
    site = [canonical("status", s) if text(s) else None for s in cols["site_status"]]
    trial = [canonical("status", s) for s in cols["trial_status"]]
    status = [s or t or "UNKNOWN" for s, t in zip(site, trial, strict=True)]
    out["status"] = status
    out["status_from"] = ["site" if s else "trial" for s in site]
    out["color"] = [list(status_colour(s)) for s in status]
    out["weight"] = 1
    out["t_title"] = [text(n) or "Unnamed site" for n in cols["facility"]]
    miles = out["miles"].tolist() if "miles" in out else [None] * len(out)
    factor = geo.per_mile(unit)
    out["t_sub"] = [
        _where(c, s, k) + (f" · {m * factor:,.1f} {unit} away" if m is not None and not pd.isna(m) else "")
        for c, s, k, m in zip(cols["city"], cols["state"], cols["country"], miles, strict=True)
    ]
    out["t_l1"] = [
        f"{n} · {label('status', st)}" + ("" if s else " (trial status)")
        for n, st, s in zip(cols["nct_id"], status, site, strict=True)
    ]
    out["t_l2"] = [one_line(t, TITLE_CHARS) for t in cols["title"]]
    return out


def shape_cells(df: pd.DataFrame) -> pd.DataFrame:
    """Grid-cell rows with colour (most common status), weight (sites) and tooltip lines."""
    if df.empty:
        added = ("color", "weight", "t_title", "t_sub", "t_l1", "t_l2")
        return df.assign(**{col: pd.Series(dtype=object) for col in added})
    out = df.copy()
    status = [_cell_status(s) for s in out["status"].tolist()]  # lists: iterating text columns cell by cell is slow
    out["status"] = status
    out["color"] = [list(status_colour(s)) for s in status]
    out["weight"] = out["sites"].astype(int)
    out["t_title"] = [f"{plural(s, 'site')} · {plural(t, 'trial')}"
                      for s, t in zip(out["weight"].tolist(), out["trials"].astype(int).tolist(), strict=True)]
    out["t_sub"] = ["around " + _where(c, None, k)
                    for c, k in zip(out["city"].tolist(), out["country"].tolist(), strict=True)]
    out["t_l1"] = ["mostly " + label("status", s) for s in status]
    out["t_l2"] = "grouped: zoom in with filters (or a place) to see each site"
    return out


def country_values(df: pd.DataFrame) -> pd.DataFrame:
    """Per-country values keyed by the Natural Earth outline name (AACT spellings merged)."""
    cols = ["name", "aact_names", "sites", "trials"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    work = df.assign(name=[geo.natural_earth_name(str(c)) for c in df["country"]])
    grouped = work.groupby("name", sort=False).agg(
        aact_names=("country", lambda s: "; ".join(sorted(set(map(str, s))))),
        sites=("sites", "sum"), trials=("trials", "sum"),
    ).reset_index()
    grouped[["sites", "trials"]] = grouped[["sites", "trials"]].astype(int)
    return grouped.sort_values(["trials", "name"], ascending=[False, True], ignore_index=True)[cols]


def state_values(df: pd.DataFrame) -> pd.DataFrame:
    """Per-US-state values keyed by the state's full name (codes and case variants merged)."""
    cols = ["name", "sites", "trials"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    names = [geo.us_state_name(str(s)) for s in df["state"]]
    work = df.assign(name=names).dropna(subset=["name"])
    grouped = work.groupby("name", sort=False).agg(sites=("sites", "sum"), trials=("trials", "sum")).reset_index()
    grouped[["sites", "trials"]] = grouped[["sites", "trials"]].astype(int)
    return grouped.sort_values(["trials", "name"], ascending=[False, True], ignore_index=True)[cols]


def log_colour(value: float, max_value: float, ramp: Sequence[RGB] = RAMP) -> RGB:
    """Colour of a positive value on a log scale from 1 to max_value (values below 1 get the lightest)."""
    if max_value <= 1:
        t = 1.0 if value >= 1 else 0.0
    else:
        t = min(1.0, math.log10(max(value, 1.0)) / math.log10(max_value))
    pos = t * (len(ramp) - 1)
    i = min(int(pos), len(ramp) - 2)
    frac = pos - i
    a, b = ramp[i], ramp[i + 1]
    return (round(a[0] + (b[0] - a[0]) * frac), round(a[1] + (b[1] - a[1]) * frac),
            round(a[2] + (b[2] - a[2]) * frac))


def log_ticks(max_value: float) -> list[int]:
    """Legend ticks for a log scale: 1, 10, 100, … up to the maximum (which is always the last tick)."""
    if max_value < 1:
        return []
    ticks = [10 ** k for k in range(int(math.log10(max_value)) + 1)]
    top = int(max_value)
    if ticks[-1] != top:
        ticks.append(top)
    return ticks


@cache
def _geojson(name: str) -> str:
    return (GEO_DIR / name).read_text(encoding="utf-8")


def outlines(level: str) -> dict[str, Any]:
    """A fresh copy of the shipped outlines: level "countries" or "states"."""
    files = {"countries": "countries-110m.geojson", "states": "us-states.geojson"}
    if level not in files:
        raise ValueError(f"unknown outline level {level!r}")
    data: dict[str, Any] = json.loads(_geojson(files[level]))
    return data


def choropleth_geojson(values: pd.DataFrame, level: str, metric: str = "trials") -> dict[str, Any]:
    """Outlines with value, fill colour and tooltip lines per feature; features without a value are dropped."""
    if metric not in ("trials", "sites"):
        raise ValueError(f"unknown metric {metric!r}")
    data = outlines(level)
    by_name = {str(r["name"]): r for r in values.to_dict("records")} if len(values) else {}
    max_value = float(values[metric].max()) if len(values) else 0.0
    features = []
    for feat in data["features"]:
        name = str(feat["properties"].get("name"))
        row = by_name.get(name)
        if row is None or int(row[metric]) <= 0:
            continue
        value = int(row[metric])
        props = {
            "name": name, "value": value, "fill": [*log_colour(value, max_value), 210],
            "t_title": name,
            "t_sub": f"{plural(int(row['trials']), 'trial')} · {plural(int(row['sites']), 'site')}",
            "t_l1": f"AACT: {row['aact_names']}" if level == "countries" and row.get("aact_names") != name else "",
            "t_l2": "",
        }
        features.append({"type": "Feature", "geometry": feat["geometry"], "properties": props})
    return {"type": "FeatureCollection", "features": features}


def unmatched_names(values: pd.DataFrame, level: str) -> list[str]:
    """Names with a value but no outline in the shipped GeoJSON (small states, islands), for a caption."""
    if values.empty:
        return []
    known = {str(f["properties"].get("name")) for f in outlines(level)["features"]}
    return [str(n) for n in values["name"] if str(n) not in known]


def ring_polygon(lat: float, lon: float, radius_miles: float, vertices: int = 96) -> list[list[float]]:
    """A closed [lon, lat] ring of points at radius_miles great-circle distance around a point."""
    if vertices < 3:
        raise ValueError("a ring needs at least 3 vertices")
    angle = min(radius_miles / geo.EARTH_RADIUS_MILES, math.pi * 0.999)
    phi1, lmb1 = math.radians(lat), math.radians(lon)
    ring = []
    for k in range(vertices + 1):
        bearing = 2 * math.pi * (k % vertices) / vertices
        phi2 = math.asin(math.sin(phi1) * math.cos(angle) + math.cos(phi1) * math.sin(angle) * math.cos(bearing))
        lmb2 = lmb1 + math.atan2(math.sin(bearing) * math.sin(angle) * math.cos(phi1),
                                 math.cos(angle) - math.sin(phi1) * math.sin(phi2))
        # Longitudes stay continuous (may pass ±180) so the ring never jumps across the map.
        ring.append([math.degrees(lmb2), math.degrees(phi2)])
    return ring


def status_legend(points: pd.DataFrame) -> list[tuple[str, RGB, int]]:
    """(label, colour, count) for each status present on the map, in the fixed legend order."""
    if points.empty or "status" not in points:
        return []
    weights = points["weight"] if "weight" in points else pd.Series([1] * len(points))
    counts: dict[str, int] = {}
    for status, w in zip(points["status"], weights, strict=True):
        counts[status] = counts.get(status, 0) + int(w)
    order = list(STATUS_COLOURS) + sorted(s for s in counts if s not in STATUS_COLOURS)
    return [(label("status", s), status_colour(s), counts[s]) for s in order if s in counts]


def legend_html(entries: Iterable[tuple[str, RGB, int | None]], title: str) -> str:
    """A small HTML legend (coloured squares and labels) for st.markdown."""
    items = []
    for name, (r, g, b), count in entries:
        suffix = f" ({count:,})" if count is not None else ""
        items.append(
            f'<span style="display:inline-flex;align-items:center;margin:0 14px 4px 0;white-space:nowrap">'
            f'<span style="width:12px;height:12px;border-radius:2px;margin-right:5px;'
            f'background:rgb({r},{g},{b});border:1px solid rgba(0,0,0,.25)"></span>'
            f"{html.escape(name)}{suffix}</span>"
        )
    return (f'<div style="font-size:0.85rem;line-height:1.5"><b>{html.escape(title)}</b><br/>'
            + "".join(items) + "</div>")


def choropleth_legend(values: pd.DataFrame, metric: str) -> list[tuple[str, RGB, int | None]]:
    """Legend entries for a log-scale choropleth: one per tick from 1 to the maximum."""
    if values.empty:
        return []
    max_value = float(values[metric].max())
    return [(f"{t:,}", log_colour(t, max_value), None) for t in log_ticks(max_value)]


def nearest_table(nearest: pd.DataFrame, unit: str = "mi") -> pd.DataFrame:
    """The nearest-sites table for display: distance in the filter's unit first, nearest first."""
    cols = ["distance", "facility", "city", "state", "country", "status", "nct_id", "title"]
    if nearest.empty:
        return pd.DataFrame(columns=cols)
    factor = geo.per_mile(unit)
    out = nearest.sort_values(["miles", "site_id"], kind="stable").reset_index(drop=True)
    table = pd.DataFrame({
        "distance": (out["miles"].astype(float) * factor).round(1),
        "facility": out["facility"].map(text), "city": out["city"].map(text),
        "state": out["state"].map(text), "country": out["country"].map(text),
        "status": [label("status", s) + ("" if src == "site" else " (trial)")
                   for s, src in zip(out["status"], out["status_from"], strict=True)],
        "nct_id": out["nct_id"], "title": out["title"].map(text),
    })
    return table[cols]


def describe_shown(summary: MapSummary) -> str:
    """One sentence saying what the map draws (never a silent cut)."""
    missing = summary.sites - summary.located
    tail = (f" {plural(missing, 'site')} {'have' if missing != 1 else 'has'} no coordinates and "
            f"{'are' if missing != 1 else 'is'} not drawn.") if missing else ""
    if summary.located == 0:
        return f"No site of the {plural(summary.trials, 'matching trial')} has coordinates to draw.{tail}"
    located = f"{plural(summary.located, 'site')} of {plural(summary.trials_located, 'trial')}"
    if summary.aggregated:
        return (f"{located} {'are' if summary.located != 1 else 'is'} grouped into "
                f"{plural(summary.shown, 'grid cell')} of {summary.cell_degrees:g}° (more than "
                f"{plural(summary.point_limit, 'site')} would slow the browser); each cell's size follows its number "
                f"of sites.{tail}")
    return f"Showing all {located}.{tail}"


def describe_choropleth(data: MapData, level: str, metric: str) -> str:
    """One sentence saying what a choropleth counts."""
    values = data.countries if level == "countries" else data.states
    where = "country" if level == "countries" else "US state"
    noun = "trials" if metric == "trials" else "sites"
    if values.empty:
        return f"No site of the matching trials lies in any {where}."
    scope = "" if level == "countries" else " in the United States"
    return (f"Colour: number of {noun} per {where}{scope} on a log scale, from {plural(data.summary.sites, 'site')} "
            f"of {plural(data.summary.trials, 'matching trial')} (a trial with sites in several places counts in "
            f"each).")
