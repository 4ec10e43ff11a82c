"""The engine of a database: the one place that computes counts, matching trials, dashboards, maps and pages.

Two implementations answer the same `Engine` protocol with the same numbers:
- `MemoryEngine`: the in-process columnar store (services/dashboard/facetstore.py) loaded from the derived tables in
  schema `app`; filters become boolean masks, so a whole dashboard takes a fraction of a second.
- `SqlEngine`: SQL over AACT's `ctgov` base tables, for databases without derived tables (a read-only AACT
  such as the AACT cloud) or when `TRIAL_LANDSCAPE_ENGINE=sql` asks for it.

`engine_for(db)` chooses once per database and process, logs the choice and keeps it; the Data page and
`db info` name it. Nothing falls back from one to the other per call: an error is the caller's to report.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np
import pandas as pd

from services import settings
from services.dashboard import facetstore, landing, relevance
from services.dashboard.facetstore import DETAIL_COLUMNS, GROUP_COLUMNS, TOP_DETAILS, MapFrames, SiteFrames
from services.dashboard.filters import (
    FUNNEL_FIELDS,
    FUNNEL_STAGES,
    Filters,
    SqlParts,
    age_years_sql,
    distance_sql,
    filter_clauses,
    near_mask,
    near_sql,
    where_sql,
)
from services.data import geo, sitename, studymesh
from services.data.db import Database, load_sql
from services.errors import QueryTimeout, TrialLandscapeError
from services.vocab import areas as area_vocab
from services.vocab import mesh as mesh_vocab

_log = logging.getLogger(__name__)

ENGINE_SETTING = "TRIAL_LANDSCAPE_ENGINE"  # "sql" or "memory"; unset: memory when the derived tables are built
# Facets about how trials ended describe closed trials, so they ignore the status filter (the default filter
# keeps open trials only, which would leave them empty); every other filter applies.
CLOSED_FACETS = ("outcome", "why_stopped", "stop_categories", "results_by_year")
PAGE_TIMEOUT_MS = 60_000
COUNT_TIMEOUT_MS = 60_000

# Sortable columns of the trials table: name → SQL expression over trials_order.sql (never user text).
SORTS: dict[str, str] = {
    "nct_id": "s.nct_id", "title": "s.brief_title", "phase": "s.phase", "status": "s.overall_status",
    "lead_sponsor": "sp.name", "enrollment": "s.enrollment", "start_date": "s.start_date",
    "sites": "(SELECT count(*) FROM ctgov.facilities f WHERE f.nct_id = s.nct_id)",
    "nearest_miles": "nd.nearest_miles",
    # Relevance to the condition text (services/dashboard/relevance.py, both engines); without a text to rank by,
    # this expression (start date) orders instead.
    "relevance": "s.start_date",
}
# The Sites page's ranks (facetstore.SITE_ORDERS) over feasibility_site_groups.sql; ties by group key.
SITE_ORDER_SQL = {"trials": "trials DESC, recruiting DESC", "recruiting": "recruiting DESC, trials DESC",
                  "distance": "miles ASC NULLS LAST, trials DESC"}
PAGE_CAP = 100_000  # the most rows one page (an export) may hold
# Sorts the in-process store does itself: numbers, and texts by their rank in the database's collation.
MEMORY_SORTS = ("sites", "enrollment", "start_date", "title", "phase", "status", "lead_sponsor")


@dataclass
class DashboardFrames:
    """The raw numbers of one dashboard: KPIs, funnel stage counts and one frame per facet (SQL's shapes)."""

    kpis: dict[str, int]
    funnel: dict[str, int] | None  # None when the funnel query failed
    raw: dict[str, pd.DataFrame]
    errors: dict[str, str] = field(default_factory=dict)
    engine: str = ""  # the engine that computed them when not the one asked (SQL while the store loads)


class Engine(Protocol):
    """What every surface asks of its database's engine."""

    kind: str  # "memory" or "sql"
    db: Database

    def describe(self) -> dict[str, str]:
        """kind, title and a sentence for the Data page and `db info`."""

    def count(self, f: Filters) -> int:
        """How many trials match."""

    def matching_ids(self, f: Filters) -> list[str]:
        """NCT ids of the matching trials, ascending."""

    def matched_select(self, f: Filters) -> tuple[str, dict[str, Any]]:
        """A SELECT of the matching NCT ids (column nct_id) and its parameters, for SQL that reads their records."""

    def dashboard_frames(self, f: Filters, specs: Mapping[str, Mapping[str, Any]], facets: list[str] | None, *,
                         timeout_ms: int, sequential: bool = False) -> DashboardFrames:
        """KPIs, funnel and the raw frame of each facet named in `specs` (all when `facets` is None)."""

    def map_frames(self, f: Filters, *, only_in_area: bool, point_limit: int, nearest_limit: int,
                   grid_steps: tuple[float, ...], timeout_ms: int) -> MapFrames:
        """Summary, points or grid cells, nearest sites and country/state values of the matching trials' sites."""

    def site_frames(self, f: Filters, place: geo.Place | None, *, order: str, limit: int,
                    investigators: bool) -> SiteFrames:
        """The Sites page: the matching trials' facility groups ranked by `order` (facetstore.SITE_ORDERS), the first
        `limit` of them with their phases, lead sponsors and (when asked) investigators."""

    def trial_page(self, f: Filters, *, sort: str, descending: bool, limit: int, offset: int) -> list[str]:
        """NCT ids of one page of matching trials under a whitelisted sort (ties by NCT id)."""

    def search_page(self, f: Filters, origin: tuple[float, float] | None, radius_miles: float | None, *,
                    limit: int, offset: int) -> tuple[list[str], int, int] | None:
        """The assistant's search order (sql/queries/assistant_search_page.sql, or the relevance order past its gate
        when a condition is given): one page of NCT ids, how many the pages reach (past the gate) and how many trials
        match (every page's count); None when the engine leaves that order to SQL."""

    def country_names(self) -> list[str]:
        """Countries that have studies (removed ones excluded), most studies first, then by name."""

    def timeline_spans(self, f: Filters) -> pd.DataFrame:
        """How many matching trials share a phase, a start quarter and an end quarter (timeline_spans.sql)."""

    def planning_frames(self, f: Filters) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Planning benchmarks per phase and in all (planning_benchmarks.sql) and the terminated matching trials'
        reasons for stopping (planning_why_stopped.sql)."""

    def loading(self) -> bool:
        """True while the engine is still getting ready in this process (the in-process store's first load)."""

    def warm(self) -> None:
        """Get ready now (a background thread at server start), so that no visitor waits for it."""


# ---- shared SQL pieces ------------------------------------------------------------------------------
def as_cte(select: str) -> str:
    """`WITH m AS (…)`: the CTE of matching NCT ids that the queries in sql/queries expect."""
    return f"WITH m AS MATERIALIZED ({select})"


def base_select(f: Filters) -> tuple[str, dict[str, Any]]:
    """SELECT of the NCT ids in ctgov.studies that pass every set filter, and its parameters."""
    parts = where_sql(f)
    return f"SELECT s.nct_id FROM ctgov.studies s WHERE {parts.sql()}", parts.params


def base_cte(f: Filters) -> tuple[str, dict[str, Any]]:
    """`WITH m AS (…)` over ctgov.studies for every set filter."""
    select, params = base_select(f)
    return as_cte(select), params


def ids_select(ids: list[str]) -> tuple[str, dict[str, Any]]:
    """SELECT of a list of NCT ids (column nct_id)."""
    return "SELECT DISTINCT unnest(CAST(:match_ids AS text[])) AS nct_id", {"match_ids": ids}


def ids_cte(ids: list[str]) -> tuple[str, dict[str, Any]]:
    """`WITH m AS (…)` over a list of NCT ids."""
    select, params = ids_select(ids)
    return as_cte(select), params


def nct_texts(values: np.ndarray) -> list[str]:
    """The store's NCT ids (bytes) as text, in the order given."""
    return [v.decode() for v in values.tolist()]


def origin_place(origin: tuple[float, float]) -> geo.Place:
    """The assistant's search origin (latitude, longitude) as a place to measure from."""
    return geo.Place("origin", origin[0], origin[1], "point", "", None, None)


def near_cte(f: Filters, params: dict[str, Any]) -> str:
    """`, near_d AS (…)`: each matching trial's nearest located site from the filter's place (empty without one)."""
    place = f.place()
    if place is None:
        return ", near_d AS (SELECT NULL::varchar AS nct_id, NULL::float8 AS nearest_miles WHERE false)"
    # The nearest site at any distance; no bounding box here, because near_sql's parameters (box, radius)
    # are shared with the filter's own near clause in the same statement and must keep the filter's radius.
    params.update({"near_lat": place.lat, "near_lon": place.lon})
    return (", near_d AS (SELECT f.nct_id, min(" + distance_sql("f") + ") AS nearest_miles "
            "FROM m JOIN ctgov.facilities f ON f.nct_id = m.nct_id "
            "WHERE f.latitude IS NOT NULL AND f.longitude IS NOT NULL GROUP BY f.nct_id)")


def relevance_page(db: Database, f: Filters, select: str, params: dict[str, Any], *, descending: bool, limit: int,
                   offset: int, gated: bool = False) -> tuple[list[str], int, int]:
    """One page in relevance order of the trials `select` gives (each engine's matching ids), how many were ranked
    (past the gate when `gated`) and how many matched; the same SQL for both engines, so they give the same order."""
    return relevance.page(db, str(relevance.text_of(f)), as_cte(select), params, descending=descending,
                          limit=max(1, min(int(limit), PAGE_CAP)), offset=offset, gated=gated)


def area_params(f: Filters, *, only_in_area: bool = True) -> dict[str, Any]:
    """Bound parameters of map_area.sql for a filter (place, radius, countries, states)."""
    place = f.place()
    params: dict[str, Any] = {
        "near_lat": place.lat if place else None, "near_lon": place.lon if place else None,
        "earth_miles": geo.EARTH_RADIUS_MILES, "area_r": None, "area_min_lat": None, "area_max_lat": None,
        "area_min_lon": None, "area_max_lon": None, "area_countries": None, "area_states": None,
    }
    if not only_in_area:
        return params
    if place is not None:
        radius = f.radius_miles()
        min_lat, max_lat, min_lon, max_lon = geo.bounding_box(place.lat, place.lon, radius)
        params.update({"area_r": radius, "area_min_lat": min_lat, "area_max_lat": max_lat,
                       "area_min_lon": min_lon, "area_max_lon": max_lon})
    params.update(area_countries=geo.country_spellings(f.country) or None, area_states=list(f.state) or None)
    return params


def country_params() -> dict[str, list[str]]:
    """Bound parameters of dashboard_kpis.sql / dashboard_area_kpis.sql: each country spelling and its one
    name (geo.country_renames), so the Countries KPI counts one country per ISO code."""
    renames = geo.country_renames()
    return {"country_spellings": list(renames), "country_names": list(renames.values())}


# ---- SQL over the base tables -----------------------------------------------------------------------
SQL_TITLE = "SQL engine: queries on AACT's base tables"
SQL_TEXT = {  # why this database's engine is SQL → what the Data page says
    "missing": ("This database has no derived tables (it is read-only, like the AACT cloud, or they have not "
                "been built), so every count, chart, map and table is computed from the `ctgov` tables "
                "directly. The numbers are the same; at full registry size a view takes seconds instead of a "
                "fraction of one. For the fast engine, load AACT into a database the app may write to, e.g. "
                "`python -m services import aact export.zip`."),
    "setting": (f"`{ENGINE_SETTING}=sql` chose this engine: every count, chart, map and table is computed "
                "from the `ctgov` tables directly. The in-process engine gives the same numbers faster but "
                "holds every study in this process's memory."),
}
MEMORY_TEXT = ("In-process engine",
               "Every study's facet inputs and every trial site are held in memory by this server process, loaded "
               "once per start from the derived tables in schema `app` (rebuilt after every import) and reloaded "
               "when those change. Counts, charts, the map and the trials table's matches are computed there, in a "
               "fraction of a second even for the whole registry.")


class SqlEngine:
    """Every number from SQL over the ctgov base tables (valid on any AACT, read-only included)."""

    kind = "sql"

    def __init__(self, db: Database, reason: str = "missing") -> None:
        self.db = db
        self.reason = reason
        studymesh.detect(db)  # the condition filter and the MeSH facets read app.study_mesh wherever built

    def describe(self) -> dict[str, str]:
        return {"mode": self.kind, "title": SQL_TITLE, "text": SQL_TEXT.get(self.reason, SQL_TEXT["missing"])}

    def matched_select(self, f: Filters) -> tuple[str, dict[str, Any]]:
        return base_select(f)

    def count(self, f: Filters) -> int:
        cte, params = base_cte(f)
        return int(self.db.fetch_value(f"{cte} SELECT count(*) FROM m", params, timeout_ms=COUNT_TIMEOUT_MS))

    def matching_ids(self, f: Filters) -> list[str]:
        cte, params = base_cte(f)
        rows = self.db.fetch_rows(f"{cte} SELECT nct_id FROM m ORDER BY nct_id", params, timeout_ms=PAGE_TIMEOUT_MS)
        return [str(r["nct_id"]) for r in rows]

    def trial_page(self, f: Filters, *, sort: str, descending: bool, limit: int, offset: int) -> list[str]:
        if sort == relevance.RELEVANCE and relevance.text_of(f):
            select, found = base_select(f)
            return relevance_page(self.db, f, select, found, descending=descending, limit=limit, offset=offset)[0]
        cte, params = base_cte(f)
        order = SORTS.get(sort, SORTS["start_date"])
        direction = "DESC NULLS LAST" if descending else "ASC NULLS LAST"
        params.update({"limit": max(1, min(int(limit), PAGE_CAP)), "offset": max(0, int(offset))})
        sql = (f"{cte}{near_cte(f, params)}\n{load_sql('trials_order')}\n"
               f"ORDER BY {order} {direction}, s.nct_id LIMIT :limit OFFSET :offset")
        return [str(r["nct_id"]) for r in self.db.fetch_rows(sql, params, timeout_ms=PAGE_TIMEOUT_MS)]

    def search_page(self, f: Filters, origin: tuple[float, float] | None, radius_miles: float | None, *,
                    limit: int, offset: int) -> tuple[list[str], int, int] | None:
        if not relevance.text_of(f):
            return None  # assistant_search_page.sql orders the matches in the database
        select, params = base_select(f)
        if origin is not None and radius_miles is not None:  # trials with a site within the radius
            place = origin_place(origin)
            select = (f"SELECT q.nct_id FROM ({select}) q WHERE EXISTS (SELECT 1 FROM ctgov.facilities f "
                      f"WHERE f.nct_id = q.nct_id AND {near_sql(place, float(radius_miles), params)})")
        if origin is None:
            return relevance_page(self.db, f, select, params, descending=True, limit=limit, offset=offset,
                                  gated=True)
        # With the patient's place: the trials past the relevance gate, nearest site first (assistant_search_page.sql).
        gated, total, matching = relevance_page(self.db, f, select, params, descending=True, limit=PAGE_CAP,
                                                offset=0, gated=True)
        if not gated:
            return [], 0, matching
        cte, page_params = ids_cte(gated)
        page_params.update({"near_lat": origin[0], "near_lon": origin[1], "limit": max(1, int(limit)),
                            "offset": max(0, int(offset))})
        rows = self.db.fetch_rows(f"{cte}\n{load_sql('assistant_search_page')}", page_params,
                                  timeout_ms=PAGE_TIMEOUT_MS)
        return [str(r["nct_id"]) for r in rows], total, matching

    def country_names(self) -> list[str]:
        return [str(r["name"]) for r in self.db.fetch_rows(load_sql("country_names"))]

    def timeline_spans(self, f: Filters) -> pd.DataFrame:
        from services.dashboard import timeline

        return timeline.spans_sql(self.db, *base_cte(f))

    def planning_frames(self, f: Filters) -> tuple[pd.DataFrame, pd.DataFrame]:
        from services.dashboard import planning

        return planning.frames_sql(self.db, *base_cte(f))

    def loading(self) -> bool:
        return False

    def warm(self) -> None:
        return None

    # ---- the dashboard
    def dashboard_frames(self, f: Filters, specs: Mapping[str, Mapping[str, Any]], facets: list[str] | None, *,
                         timeout_ms: int, sequential: bool = False) -> DashboardFrames:
        queries = dashboard_queries(f, specs, facets)  # with a place, "kpis" counts the sites in its area
        if sequential:  # the benchmark's straightforward baseline: one query after another
            results: dict[str, pd.DataFrame | TrialLandscapeError] = {}
            for name, (sql, bound) in queries.items():
                try:
                    results[name] = self.db.fetch_df(sql, bound, timeout_ms=timeout_ms)
                except TrialLandscapeError as err:
                    results[name] = err
        else:
            results = self.db.fetch_many(queries, timeout_ms=timeout_ms)
        errors = {name: "timed out" if isinstance(r, QueryTimeout) else str(r)
                  for name, r in results.items() if isinstance(r, TrialLandscapeError)}
        kpi_df, funnel_df = results["kpis"], results["funnel"]
        kpis = ({k: int(v or 0) for k, v in kpi_df.iloc[0].to_dict().items()}
                if isinstance(kpi_df, pd.DataFrame) else {})
        funnel = ({k: int(v) for k, v in funnel_df.iloc[0].to_dict().items()}
                  if isinstance(funnel_df, pd.DataFrame) else None)
        raw = {n: r for n, r in results.items() if n in specs and isinstance(r, pd.DataFrame)}
        return DashboardFrames(kpis, funnel, raw, errors)

    # ---- the Sites page
    def site_frames(self, f: Filters, place: geo.Place | None, *, order: str, limit: int,
                    investigators: bool) -> SiteFrames:
        cte, params = base_cte(f)
        # Only the facilities in the filter's area (map_area.sql: countries, states, radius around its place, which
        # is then also the place distances are measured from: feasibility.site_table passes the filter's own);
        # without an area, every facility of the matching trials.
        sites, in_area = "SELECT f.id AS site_id FROM m JOIN ctgov.facilities f ON f.nct_id = m.nct_id", ""
        if f.country or f.state or f.near:
            params = dict(params, **area_params(f))
            sites = f"SELECT a.site_id FROM ({load_sql('map_area')}) a"
            in_area = f" AND k.facility_id IN ({sites})"
        keyed = (f"{cte}, keyed AS (SELECT k.facility_id, k.group_key FROM ({sitename.site_keys_sql()}) k "
                 f"WHERE k.nct_id IN (SELECT nct_id FROM m){in_area})")
        p = dict(params, near_lat=place.lat if place else None, near_lon=place.lon if place else None,
                 earth_miles=geo.EARTH_RADIUS_MILES, limit=max(0, int(limit)))
        ranked = (f"{keyed}\n{load_sql('feasibility_site_groups')}\n"
                  f"ORDER BY {SITE_ORDER_SQL.get(order, SITE_ORDER_SQL['trials'])}, group_key COLLATE \"C\" "
                  "LIMIT :limit")
        groups = self.db.fetch_df(ranked, p, timeout_ms=PAGE_TIMEOUT_MS)
        all_sites = int(self.db.fetch_value(f"{cte} SELECT count(*) FROM ({sites}) x", params,
                                            timeout_ms=COUNT_TIMEOUT_MS))
        named = int(groups["n_sites"].iloc[0]) if len(groups) else 0
        totals = {"groups": int(groups["n_groups"].iloc[0]) if len(groups) else 0, "sites": named,
                  "unnamed": all_sites - named}
        if groups.empty:
            return SiteFrames(pd.DataFrame(columns=GROUP_COLUMNS), pd.DataFrame(columns=DETAIL_COLUMNS), totals)
        keys = [str(k) for k in groups["group_key"]]
        detail = self.db.fetch_df(f"{keyed}\n{load_sql('feasibility_site_details')}",
                                  dict(params, keys=keys, investigators=bool(investigators), top=TOP_DETAILS),
                                  timeout_ms=PAGE_TIMEOUT_MS)
        rep = dict(zip(keys, [int(i) for i in groups["site_id"]], strict=True))
        detail = detail.assign(site_id=[rep[str(k)] for k in detail["group_key"]])
        return SiteFrames(groups.drop(columns=["group_key", "n_groups", "n_sites"]).reset_index(drop=True),
                          detail[DETAIL_COLUMNS].reset_index(drop=True), totals)

    # ---- the map
    def _area(self, f: Filters, body: str, only_in_area: bool) -> tuple[str, dict[str, Any]]:
        cte, params = base_cte(f)
        params.update(area_params(f, only_in_area=only_in_area))
        return f"{cte}, area AS ({load_sql('map_area')})\n{load_sql(body)}", params

    def map_frames(self, f: Filters, *, only_in_area: bool, point_limit: int, nearest_limit: int,
                   grid_steps: tuple[float, ...], timeout_ms: int) -> MapFrames:
        place = f.place()
        queries = {name: self._area(f, f"map_{name}", only_in_area)
                   for name in ("summary", "country_values", "state_values")}
        if place is not None:
            sql, params = self._area(f, "map_nearest_sites", only_in_area)
            params["limit"] = int(nearest_limit)
            queries["nearest"] = (sql, params)
        results = self.db.fetch_many(queries, timeout_ms=timeout_ms)
        summary_df = results["summary"]
        if isinstance(summary_df, TrialLandscapeError):
            raise summary_df  # without the summary there is no map to draw
        row = summary_df.iloc[0].to_dict()
        located = int(row["located"] or 0)
        cell: float | None = None
        if located > point_limit:
            cell = next((step for i, step in enumerate(grid_steps) if int(row.get(f"cells_{i}") or 0) <= point_limit),
                        grid_steps[-1])
            sql, params = self._area(f, "map_site_grid", only_in_area)
            params["cell"] = cell
        else:
            sql, params = self._area(f, "map_site_points", only_in_area)
            params["limit"] = max(1, point_limit)
        points = self.db.fetch_df(sql, params, timeout_ms=timeout_ms)
        errors: dict[str, str] = {}

        def frame(name: str, key: str) -> pd.DataFrame:
            value = results[name]
            if isinstance(value, TrialLandscapeError):
                errors[key] = str(value)
                return pd.DataFrame()
            return value

        summary = {k: int(row[k] or 0) for k in ("sites", "located", "trials", "trials_located")}
        return MapFrames(summary, cell, points, frame("nearest", "nearest") if place is not None else None,
                         frame("country_values", "countries"), frame("state_values", "states"), errors)


def dashboard_queries(f: Filters, specs: Mapping[str, Mapping[str, Any]], facets: list[str] | None = None
                      ) -> dict[str, tuple[str, dict[str, Any] | None]]:
    """Every query of the dashboard on the base tables, by name: "kpis", "funnel" and one per facet named in
    `specs` (all when `facets` is None; closed facets without the status filter). The SQL engine runs them;
    "Show the SQL" (services/dashboard/showsql.py) shows them."""
    cte, params = base_cte(f)
    kpis = f"{cte}\n{load_sql('dashboard_kpis')}"
    kpi_params = {**params, **country_params()}
    if f.country or f.state or f.near:  # Sites and Countries: the sites inside the place filter's area
        kpi_params = {**kpi_params, **area_params(f, only_in_area=True)}
        kpis = (f"{cte}, area AS ({load_sql('map_area')}),\nk AS ({load_sql('dashboard_kpis')}),\n"
                f"a AS ({load_sql('dashboard_area_kpis')})\n"
                "SELECT k.matching_trials, k.recruiting, a.sites, a.countries, k.planned_enrollment "
                "FROM k, a")
    queries: dict[str, tuple[str, dict[str, Any] | None]] = {
        "funnel": funnel_query(f), "kpis": (kpis, kpi_params)}
    queries.update(facet_queries(f, specs, [n for n in specs if facets is None or n in facets]))
    if f.status:
        closed = [n for n in CLOSED_FACETS if n in specs and (facets is None or n in facets)]
        queries.update(facet_queries(replace(f, status=()), specs, closed))
    return queries


def facet_queries(f: Filters, specs: Mapping[str, Mapping[str, Any]], names: list[str]
                  ) -> dict[str, tuple[str, dict[str, Any] | None]]:
    """SQL text and parameters of each named facet query for a filter, on the base tables."""
    cte, params = base_cte(f)
    ages = (", ages AS (SELECT m.nct_id, " + age_years_sql("e.minimum_age") + " AS lo, "
            + age_years_sql("e.maximum_age")
            + " AS hi FROM m LEFT JOIN ctgov.eligibilities e ON e.nct_id = m.nct_id)")
    out: dict[str, tuple[str, dict[str, Any] | None]] = {}
    for name in names:
        spec = specs[name]
        extra = ages if name == "age_groups" else ""
        p = dict(params)
        if "top" in spec:
            p["top"] = spec["top"]
        query = spec["sql"]
        # The MeSH charts read app.study_mesh through the ctgov views when this database has it (issue 38),
        # also while "Show the SQL" keeps the filters on the base tables: the SQL console reads those views.
        if name in MESH_FACETS and studymesh.built():
            query = MESH_FACETS[name]
        elif name == "therapeutic_areas":
            _area_heads(p)
            query = "facet_therapeutic_areas_base"
        out[name] = (f"{cte}{extra}\n{load_sql(query)}", p)
    return out


# The facets that count MeSH headings → their query over ctgov.study_mesh_terms (else stats.FACETS' own).
MESH_FACETS = {"conditions": "facet_conditions_mesh", "therapeutic_areas": "facet_therapeutic_areas"}


def _area_heads(params: dict[str, Any]) -> None:
    """facet_therapeutic_areas_base.sql's parameters: each area's headings in lower case, with the area's name
    (a database without app.study_mesh, such as a read-only AACT)."""
    m = mesh_vocab.vocabulary()
    pairs = [(ui, a.name) for a in area_vocab.areas() for ui in sorted(a.descriptors())]
    params.update(area_heads=[m.name(u).lower() for u, _ in pairs], area_names=[n for _, n in pairs])


def funnel_query(f: Filters) -> tuple[str, dict[str, Any]]:
    """The count of each cumulative funnel stage, one sub-select per stage that narrows.

    Each stage's filters sit in a WHERE clause, where PostgreSQL turns `nct_id IN (…)` into a hash semi-join.
    (Inside `count(*) FILTER (WHERE …)` the same test becomes a subplan that PostgreSQL may re-scan for every
    study once its result outgrows work_mem: at registry scale a common condition took over ten minutes.)
    """
    params: dict[str, Any] = {}
    clauses = filter_clauses(f, params)
    base = [c for n, c in clauses.items() if n not in FUNNEL_FIELDS]

    def count(conds: list[str]) -> str:
        return f"(SELECT count(*) FROM ctgov.studies s WHERE {SqlParts(conds, params).sql()})"

    inner = [f"{count(base)} AS base"]
    outer = ["base"]
    so_far, latest = list(base), "base"
    for stage, names in FUNNEL_STAGES.items():
        added = [f"({clauses[n]})" for n in names if n in clauses]
        if added:  # a stage without a filter keeps the count of the stage before it
            so_far.extend(added)
            inner.append(f"{count(so_far)} AS {stage}")
            latest = stage
        outer.append(f"{latest} AS {stage}" if latest != stage else stage)
    return f"SELECT {', '.join(outer)} FROM (SELECT {', '.join(inner)}) stages", params


# ---- the in-process store ---------------------------------------------------------------------------
class MemoryEngine:
    """Every number from the in-process columnar store over the derived tables (services/dashboard/facetstore.py)."""

    kind = "memory"

    def __init__(self, db: Database) -> None:
        self.db = db
        # Set by warm() (the server's start): until the store is ready, SQL answers instead of every visitor
        # waiting for the load by COPY. The CLI and benchmarks never warm, so they wait and always get the store.
        self.serve_sql_while_loading = False
        self._sql = SqlEngine(db, reason="missing")

    def describe(self) -> dict[str, str]:
        title, text = MEMORY_TEXT
        store = facetstore.loaded(self.db)
        if store is not None:  # how this start got its arrays: the start cache's files, or the database
            how = "mapped from the start cache" if store.from_cache else "loaded from the database"
            text += f" This start: {store.n:,} studies {how} in {store.load_seconds:.1f} s."
        return {"mode": self.kind, "title": title, "text": text}

    def _ready(self) -> Any:
        """The store, or None while the server loads it in the background (then SQL answers)."""
        if not self.serve_sql_while_loading:
            return facetstore.store_for(self.db)
        return facetstore.ready_store(self.db)

    def export_rows(self, f: Filters, ids: list[str]) -> pd.DataFrame | None:
        """trials_page.sql's rows of the trials from the store's export table, when it has one and the filter
        no place (the distances stay the database's); else None and the caller reads them by SQL."""
        store = self._ready()
        if store is None or f.place() is not None:
            return None
        return facetstore.export_rows(store, ids)

    def count(self, f: Filters) -> int:
        store = self._ready()
        if store is None:
            return self._sql.count(f)
        return int(np.count_nonzero(store.mask(f, self.db)))

    def matching_ids(self, f: Filters) -> list[str]:
        store = self._ready()
        if store is None:
            return self._sql.matching_ids(f)
        return nct_texts(store.nct[store.mask(f, self.db)])  # the store is in NCT id order

    def matched_select(self, f: Filters) -> tuple[str, dict[str, Any]]:
        if self._ready() is None:
            return self._sql.matched_select(f)
        return ids_select(self.matching_ids(f))

    def trial_page(self, f: Filters, *, sort: str, descending: bool, limit: int, offset: int) -> list[str]:
        store = self._ready()
        if store is None:
            return self._sql.trial_page(f, sort=sort, descending=descending, limit=limit, offset=offset)
        if sort == relevance.RELEVANCE and relevance.text_of(f):
            select, params = ids_select(self.matching_ids(f))
            return relevance_page(self.db, f, select, params, descending=descending, limit=limit, offset=offset)[0]
        mask = store.mask(f, self.db)
        start = max(0, int(offset))
        stop = start + max(1, min(int(limit), PAGE_CAP))
        if sort not in SORTS or sort == relevance.RELEVANCE:
            sort = "start_date"
        if sort == "nct_id":  # the store's own order
            ids = store.nct[mask]
            return nct_texts((ids[::-1] if descending else ids)[start:stop])
        # MEMORY_SORTS are sorted here, no database round trip; the distance sort by each matching trial's
        # nearest site from the filter's place, from the store's sites.
        values = None if sort in MEMORY_SORTS else store.nearest_miles(f.place(), mask, f.radius_miles())
        return nct_texts(store.sorted_page(mask, sort, descending=descending, start=start, stop=stop,
                                           values=values))

    def search_page(self, f: Filters, origin: tuple[float, float] | None, radius_miles: float | None, *,
                    limit: int, offset: int) -> tuple[list[str], int, int] | None:
        store = self._ready()
        if store is None:
            return self._sql.search_page(f, origin, radius_miles, limit=limit, offset=offset)
        mask = store.mask(f, self.db)
        place = None if origin is None else origin_place(origin)
        if place is not None and radius_miles is not None:  # trials with a site within the radius
            mask &= near_mask(store, place, float(radius_miles))
        rows = np.flatnonzero(mask)
        matching = total = int(rows.size)
        if rows.size == 0:
            return [], 0, 0
        if relevance.text_of(f):  # a condition: the relevance order past its gate, nearest first with a place
            select, params = ids_select(nct_texts(store.nct[rows]))
            if place is None:
                return relevance_page(self.db, f, select, params, descending=True, limit=limit, offset=offset,
                                      gated=True)
            # The first PAGE_CAP past the gate are ordered (as SQL does); `total` counts every one past it.
            gated, total, _ = relevance_page(self.db, f, select, params, descending=True, limit=PAGE_CAP, offset=0,
                                             gated=True)
            keep = np.isin(store.nct[rows], np.array([g.encode() for g in gated], dtype=store.nct.dtype))
            mask = np.zeros(store.n, dtype=bool)
            mask[rows[keep]] = True
            rows = rows[keep]
            if rows.size == 0:
                return [], 0, matching
        miles = store.nearest_miles(place, mask, None if radius_miles is None else float(radius_miles))[rows]
        rank = {"RECRUITING": 0, "NOT_YET_RECRUITING": 1}  # every other status (and none) ranks 2
        codes = np.array([rank.get(str(x).replace(" ", "_").upper(), 2) for x in store.status.labels],
                         dtype=np.int8)
        status = codes[store.status.codes[rows]]
        start = store.start_day[rows]
        no_start, no_miles = np.isnan(start), np.isnan(miles)
        # ORDER BY nearest ASC NULLS LAST, status rank, start DESC NULLS LAST, nct_id (the last key sorts first)
        order = np.lexsort((rows, -np.where(no_start, 0.0, start), no_start, status, np.where(no_miles, 0.0, miles),
                            no_miles))
        lo = max(0, int(offset))
        page = rows[order[lo:lo + max(1, int(limit))]]
        return nct_texts(store.nct[page]), total, matching

    def country_names(self) -> list[str]:
        stored = landing.load(self.db, facetstore.generation(self.db), landing.COUNTRY_NAMES)  # as stored for it
        if isinstance(stored, list):
            return [str(name) for name in stored]
        store = self._ready()
        if store is None:
            return self._sql.country_names()
        # The store's country list holds each study's distinct country names (as app.study_facets does).
        _, country = store.lists["country"]
        n = np.bincount(country.codes, minlength=country.size)
        order = sorted(range(len(n)), key=lambda i: (-int(n[i]), str(country.labels[i])))
        names = [str(country.labels[i]) for i in order if n[i] and country.labels[i] is not None]
        landing.save(self.db, store.refreshed_at, landing.COUNTRY_NAMES, names)
        return names

    def loading(self) -> bool:
        return not facetstore.is_loaded(self.db)

    def timeline_spans(self, f: Filters) -> pd.DataFrame:
        from services.dashboard import timeline

        store = self._ready()
        if store is None:
            return self._sql.timeline_spans(f)
        return timeline.spans_from_store(store, store.mask(f, self.db))

    def planning_frames(self, f: Filters) -> tuple[pd.DataFrame, pd.DataFrame]:
        from services.dashboard import planning

        store = self._ready()
        if store is None:
            return self._sql.planning_frames(f)
        return planning.frames_from_store(store, store.mask(f, self.db))

    def warm(self) -> None:
        self.serve_sql_while_loading = True
        facetstore.warm_up(self.db)

    def dashboard_frames(self, f: Filters, specs: Mapping[str, Mapping[str, Any]], facets: list[str] | None, *,
                         timeout_ms: int, sequential: bool = False) -> DashboardFrames:
        landing_view = facets is None and f.is_default()
        if landing_view:  # as this engine computed it for this generation (by now, or before this process started)
            stored = landing.load_dashboard(self.db, facetstore.generation(self.db), specs)
            if stored is not None:
                return stored
        store = self._ready()
        if store is None:
            frames = self._sql.dashboard_frames(f, specs, facets, timeout_ms=timeout_ms, sequential=sequential)
            return replace(frames, engine=self._sql.kind)
        tops = {name: int(spec["top"]) for name, spec in specs.items() if "top" in spec}
        frames = DashboardFrames(*store.dashboard_frames(f, self.db, tops))
        if landing_view:
            landing.save(self.db, store.refreshed_at, landing.dashboard_name(specs), landing.encode(frames))
        return frames

    def site_frames(self, f: Filters, place: geo.Place | None, *, order: str, limit: int,
                    investigators: bool) -> SiteFrames:
        store = self._ready()
        if store is None:
            return self._sql.site_frames(f, place, order=order, limit=limit, investigators=investigators)
        return facetstore.site_frames(store, f, self.db, place, order=order, limit=limit,
                                      investigators=investigators)

    def map_frames(self, f: Filters, *, only_in_area: bool, point_limit: int, nearest_limit: int,
                   grid_steps: tuple[float, ...], timeout_ms: int) -> MapFrames:
        store = self._ready()
        if store is None:
            return self._sql.map_frames(f, only_in_area=only_in_area, point_limit=point_limit,
                                        nearest_limit=nearest_limit, grid_steps=grid_steps, timeout_ms=timeout_ms)
        return facetstore.map_frames(store, f, self.db, only_in_area=only_in_area, point_limit=point_limit,
                                     nearest_limit=nearest_limit, grid_steps=grid_steps)


# ---- one choice per database ------------------------------------------------------------------------
_engines: dict[str, Engine] = {}
_lock = threading.Lock()


def derived_available(db: Database) -> bool:
    """True when app.study_facets exists and has been built (rebuilt after every import)."""
    try:
        return db.fetch_value("SELECT to_regclass('app.study_facets') IS NOT NULL AND EXISTS "
                              "(SELECT 1 FROM app.meta WHERE key = 'facets_refreshed_at')", timeout_ms=5_000) is True
    except TrialLandscapeError:
        return False


def choose(db: Database) -> Engine:
    """The engine a database gets: `TRIAL_LANDSCAPE_ENGINE` when set, else in-process when the derived tables
    are built, else SQL over the base tables."""
    setting = settings.current().engine
    if setting == "sql":
        return SqlEngine(db, reason="setting")
    if derived_available(db):
        return MemoryEngine(db)
    if setting == "memory":
        _log.warning("%s=memory, but %s has no derived tables: using SQL on the base tables", ENGINE_SETTING,
                     db.label)
    return SqlEngine(db, reason="missing")


def engine_for(db: Database) -> Engine:
    """This database's engine, chosen on first use and kept for the life of the process (logged once)."""
    found = _engines.get(db.url)
    if found is not None:
        return found
    with _lock:
        found = _engines.get(db.url)
        if found is None:
            found = choose(db)
            _engines[db.url] = found
            _log.info("engine for %s: %s", db.label, found.describe()["title"])
        return found


def by_name(db: Database, name: str = "auto") -> Engine:
    """An engine by name for the CLI and benchmarks: "auto" is the database's own (engine_for); "memory" or
    "sql" builds that one explicitly, to compare the two."""
    if name == "memory":
        return MemoryEngine(db)
    if name == "sql":
        return SqlEngine(db, reason="setting")
    return engine_for(db)


def prepare_after_import(db: Database) -> float | None:
    """After an import: load the in-process engine's arrays now and write its start cache (seconds taken), so the
    next server start maps them at once instead of answering from SQL while it loads them (~20 s at 575,000
    studies). None when this database's engine is SQL or the start cache is off."""
    studymesh.ensure_built(db)  # each study's MeSH headings, from the imported names (Python: not in AFTER_IMPORT)
    forget(db)  # the import may have built the derived tables this engine choice depends on
    if engine_for(db).kind != "memory" or not facetstore.cache_enabled():
        return None
    started = time.perf_counter()
    facetstore.store_for(db)  # loads the new generation and writes its cache (in the folder and the database)
    facetstore.keep_copy(db)
    return round(time.perf_counter() - started, 1)


def forget(db: Database | None = None) -> None:
    """Choose again on next use (tests; after building the derived tables in this process)."""
    with _lock:
        if db is None:
            _engines.clear()
        else:
            _engines.pop(db.url, None)
