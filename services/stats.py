"""Dashboard statistics for one filter: KPIs, the narrowing funnel and every facet of the Explore page.

`dashboard(filters)` runs its queries concurrently through the database door; each facet has its
own time limit, and one that times out or fails is reported in `errors` while the rest come back.
The CLI (`python -m services stats`), the Explore page and the assistant all call this one function.
"""

from __future__ import annotations

import logging
import os
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from services import runtime
from services.cache import CacheStats, SingleFlightCache
from services.db import Database, load_sql
from services.errors import QueryTimeout, TrialLandscapeError
from services.filters import (
    FUNNEL_FIELDS,
    Filters,
    SqlParts,
    age_years_sql,
    derived_clauses,
    filter_clauses,
    where_sql,
)
from services.normalize import CLOSED_OUTCOMES, canonical, label, phase_list

_log = logging.getLogger(__name__)

FACET_TIMEOUT_MS = 8_000
TOP = 15

# facet name → (query file, title, filter field a click sets, label kind, extra parameters)
FACETS: dict[str, dict[str, Any]] = {
    "phase": {"sql": "facet_phase", "title": "Phase", "filter": "phase", "kind": "phase"},
    "status": {"sql": "facet_status", "title": "Recruitment status", "filter": "status", "kind": "status"},
    "conditions": {"sql": "facet_conditions", "title": "Top conditions", "filter": "condition", "top": TOP},
    "lead_sponsors": {"sql": "facet_lead_sponsors", "title": "Top lead sponsors", "filter": "sponsor", "top": TOP},
    "funder_class": {"sql": "facet_funder_class", "title": "Funder class", "filter": "funder_class",
                     "kind": "funder_class"},
    "study_type": {"sql": "facet_study_type", "title": "Study type", "filter": "study_type", "kind": "study_type"},
    "enrollment": {"sql": "facet_enrollment", "title": "Enrollment size (actual vs anticipated)",
                   "filter": "enrollment"},
    "sex": {"sql": "facet_sex", "title": "Sex eligibility", "filter": "sex", "kind": "sex"},
    "age_groups": {"sql": "facet_age_groups", "title": "Age groups accepted"},
    "intervention_types": {"sql": "facet_intervention_types", "title": "Intervention types",
                           "kind": "intervention_type"},
    "interventions": {"sql": "facet_interventions", "title": "Top interventions", "filter": "intervention", "top": TOP},
    "duration": {"sql": "facet_duration", "title": "Trial duration (start → primary completion)"},
    "start_year": {"sql": "facet_start_year", "title": "Start year", "filter": "start_year"},
    "sites_per_trial": {"sql": "facet_sites_per_trial", "title": "Sites per trial"},
    "countries": {"sql": "facet_countries", "title": "Countries", "filter": "country", "top": 25},
    "us_states": {"sql": "facet_us_states", "title": "US states", "filter": "state"},
    "outcome": {"sql": "facet_status", "title": "How closed trials ended", "filter": "status", "kind": "status"},
    "why_stopped": {"sql": "facet_why_stopped", "title": "Top reasons for stopping", "top": 10},
    "results_by_year": {"sql": "facet_results_by_year", "title": "Results reported, by completion year"},
    "collaboration": {"sql": "facet_collaboration", "title": "Top sponsor collaborations", "filter": "sponsor",
                      "top": 12},
    "collaboration_mix": {"sql": "facet_collaboration_mix", "title": "Collaborators per trial"},
}

BUCKETS = {
    "enrollment": ["Not given", "1–49", "50–99", "100–249", "250–499", "500–999", "1,000–4,999", "5,000+"],
    "duration": ["< 1 year", "1–2 years", "2–3 years", "3–5 years", "5–10 years", "10+ years"],
    "sites_per_trial": ["No sites listed", "1 site", "2–5 sites", "6–20 sites", "21–100 sites", "100+ sites"],
    "collaboration_mix": ["Lead sponsor only", "1 collaborator", "2–3 collaborators", "4+ collaborators"],
}
AGE_GROUP_LABELS = {"CHILD": "Children (under 18)", "ADULT": "Adults (18–64)", "OLDER_ADULT": "Older adults (65+)"}
# Facets about how trials ended describe closed trials, so they ignore the status filter (the default filter
# keeps open trials only, which would leave them empty); every other filter applies.
CLOSED_FACETS = ("outcome", "why_stopped", "results_by_year")
# Enrollment bucket (facet value) → (enrollment_min, enrollment_max) a click sets.
ENROLLMENT_RANGES: dict[int, tuple[int, int | None]] = {
    1: (0, 49), 2: (50, 99), 3: (100, 249), 4: (250, 499), 5: (500, 999), 6: (1000, 4999), 7: (5000, None)}
FUNNEL_LABELS = {"base": "All trials (other filters)", "condition": "Condition", "status": "Status",
                 "age": "Age", "sex": "Sex", "near": "Place"}


@dataclass
class Dashboard:
    """Everything the Explore page shows for one filter."""

    filters: Filters
    kpis: dict[str, int]
    funnel: list[dict[str, Any]]
    facets: dict[str, list[dict[str, Any]]]
    errors: dict[str, str] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)
    mode: str = "direct"

    def as_dict(self) -> dict[str, Any]:
        return {"query": self.filters.query_string(), "kpis": self.kpis, "funnel": self.funnel,
                "facets": self.facets, "errors": self.errors, "notices": self.notices}


_mode_override: ContextVar[str | None] = ContextVar("stats_mode_override", default=None)


@contextmanager
def forced_mode(mode: str) -> Iterator[None]:
    """Within this block, "auto" means `mode` (the benchmark's straightforward baseline uses "direct")."""
    token = _mode_override.set(mode)
    try:
        yield
    finally:
        _mode_override.reset(token)


MODES = ("memory", "derived", "direct")


def resolve_mode(mode: str = "auto", db: Database | None = None) -> str:
    """"memory" (the in-process facet engine over the derived tables) when app.study_facets is built on this
    database, else "direct" (explicit modes pass through). TRIAL_LANDSCAPE_FACET_ENGINE=sql makes auto "derived".
    """
    if mode != "auto":
        return mode
    override = _mode_override.get()
    if override:
        return override
    if not derived_available(db or runtime.get_db()):
        return "direct"
    return "derived" if os.environ.get("TRIAL_LANDSCAPE_FACET_ENGINE", "").lower() == "sql" else "memory"


ENGINE_TEXT = {
    "memory": ("In-process engine",
               "Every study's facet inputs and every trial site are held in memory by this server process, loaded "
               "once per start from the derived tables in schema `app` (rebuilt after every import) and reloaded "
               "when those change. Filters, charts and the map are computed there, in a fraction of a second even "
               "for the whole registry."),
    "derived": ("SQL over the derived tables",
                "The dashboard is computed in PostgreSQL from the per-study table `app.study_facets` (rebuilt after "
                "every import); `TRIAL_LANDSCAPE_FACET_ENGINE=sql` chose this over the in-process engine, which "
                "is faster but holds the data in this process's memory."),
    "direct": ("Direct queries on AACT's base tables",
               "This database has no derived tables (it is read-only, like the AACT cloud, or they have not been "
               "built), so every chart is computed from the `ctgov` tables directly. The numbers are the same; at "
               "full registry size a view takes seconds instead of a fraction of one. For the fast engine, load "
               "AACT into a database the app may write to, e.g. `python -m services import aact export.zip`."),
}


def warm_engine(db: Database | None = None) -> None:
    """Load the in-process facet engine now when it is the one in use (server start, load test), so that no
    visitor's request pays for it."""
    db = db or runtime.get_db()
    if resolve_mode("auto", db) == "memory":
        from services import facetstore

        facetstore.warm_up(db)


def engine_loading(db: Database | None = None) -> bool:
    """True while the in-process engine is in use but not yet loaded in this process."""
    db = db or runtime.get_db()
    if resolve_mode("auto", db) != "memory":
        return False
    from services import facetstore

    return not facetstore.is_loaded(db)


def engine(db: Database | None = None) -> dict[str, str]:
    """Which way the dashboard is computed on this database, with a title and an explanation (Data page, db info)."""
    mode = resolve_mode("auto", db or runtime.get_db())
    title, text = ENGINE_TEXT[mode]
    return {"mode": mode, "title": title, "text": text}


def matched_cte(f: Filters, *, skip: tuple[str, ...] = (), mode: str = "auto",
                db: Database | None = None) -> tuple[str, dict[str, Any]]:
    """`WITH m AS (…)` selecting the NCT ids that match the filter, and its parameters.

    mode "direct" reads the ctgov base tables (valid on any AACT); "derived" reads app.study_facets;
    "auto" picks derived when it has been built.
    """
    mode = resolve_mode(mode, db)
    if mode in ("derived", "memory"):
        params: dict[str, Any] = {}
        clauses = derived_clauses(f, params)
        where = " AND ".join(f"({c})" for n, c in clauses.items() if n not in skip) or "TRUE"
        return (f"WITH mf AS MATERIALIZED (SELECT sf.* FROM app.study_facets sf WHERE {where}), "
                f"m AS (SELECT nct_id FROM mf)"), params
    parts = where_sql(f, skip=skip)
    return f"WITH m AS MATERIALIZED (SELECT s.nct_id FROM ctgov.studies s WHERE {parts.sql()})", parts.params


def _ages_cte() -> str:
    return (", ages AS (SELECT m.nct_id, " + age_years_sql("e.minimum_age") + " AS lo, "
            + age_years_sql("e.maximum_age") + " AS hi FROM m LEFT JOIN ctgov.eligibilities e ON e.nct_id = m.nct_id)")


def facet_queries(f: Filters, names: list[str] | None = None) -> dict[str, tuple[str, dict[str, Any]]]:
    """SQL text and parameters of each facet query for a filter (direct mode, on the base tables)."""
    cte, params = matched_cte(f, mode="direct")
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for name, spec in FACETS.items():
        if names is not None and name not in names:
            continue
        body = load_sql(spec["sql"])
        extra = _ages_cte() if name == "age_groups" else ""
        p = dict(params)
        if "top" in spec:
            p["top"] = spec["top"]
        out[name] = (f"{cte}{extra}\n{body}", p)
    return out


def funnel_query(f: Filters, mode: str = "direct") -> tuple[str, dict[str, Any]]:
    """The count of each cumulative funnel stage, one sub-select per stage that narrows.

    Each stage's filters sit in a WHERE clause, where PostgreSQL turns `nct_id IN (…)` into a hash semi-join.
    (Inside `count(*) FILTER (WHERE …)` the same test becomes a subplan that PostgreSQL may re-scan for every
    study once its result outgrows work_mem: at registry scale a common condition took over ten minutes.)
    """
    params: dict[str, Any] = {}
    clauses = derived_clauses(f, params) if mode == "derived" else filter_clauses(f, params)
    base = [c for n, c in clauses.items() if n not in FUNNEL_FIELDS]
    table = "app.study_facets sf" if mode == "derived" else "ctgov.studies s"

    def count(conds: list[str]) -> str:
        return f"(SELECT count(*) FROM {table} WHERE {SqlParts(conds, params).sql()})"

    inner = [f"{count(base)} AS base"]
    outer = ["base"]
    so_far, latest = list(base), "base"
    for stage in FUNNEL_FIELDS:
        if stage in clauses:  # a stage without a filter keeps the count of the stage before it
            so_far.append(f"({clauses[stage]})")
            inner.append(f"{count(so_far)} AS {stage}")
            latest = stage
        outer.append(f"{latest} AS {stage}" if latest != stage else stage)
    return f"SELECT {', '.join(outer)} FROM (SELECT {', '.join(inner)}) stages", params


# Facets that come from child tables even in derived mode (the rest come from app.study_facets in one pass).
CHILD_FACETS = ("conditions", "interventions", "collaboration")
_derived_ok: dict[str, tuple[float, bool]] = {}
DERIVED_CHECK_TTL_S = 30.0


def derived_available(db: Database) -> bool:
    """True when app.study_facets exists and has been built (rebuilt after every import)."""
    now = time.monotonic()
    cached_at = _derived_ok.get(db.label)
    if cached_at and now - cached_at[0] < DERIVED_CHECK_TTL_S:
        return cached_at[1]
    try:
        ok = db.fetch_value("SELECT to_regclass('app.study_facets') IS NOT NULL AND EXISTS "
                            "(SELECT 1 FROM app.meta WHERE key = 'facets_refreshed_at')", timeout_ms=5_000) is True
    except TrialLandscapeError:
        ok = False
    _derived_ok[db.label] = (now, ok)
    return ok


def forget_derived_check() -> None:
    """Drop the cached answer of derived_available (after a rebuild or a database switch)."""
    _derived_ok.clear()


def dashboard_queries(f: Filters, mode: str, facets: list[str] | None = None
                      ) -> dict[str, tuple[str, dict[str, Any] | None]]:
    """Every query of one dashboard, by name, for the given mode."""
    cte, params = matched_cte(f, mode=mode)
    queries: dict[str, tuple[str, dict[str, Any] | None]] = {"funnel": funnel_query(f, mode)}
    if mode == "derived":
        p = {**params, "top_sponsors": FACETS["lead_sponsors"]["top"], "top_countries": FACETS["countries"]["top"],
             "top_reasons": FACETS["why_stopped"]["top"]}
        queries["derived"] = (f"{cte}\n{load_sql('dashboard_derived')}", p)
        if f.status and any(facets is None or n in facets for n in CLOSED_FACETS):
            closed_cte, closed_params = matched_cte(replace(f, status=()), mode=mode)
            queries["closed"] = (f"{closed_cte}\n{load_sql('dashboard_derived_closed')}", {
                **closed_params, "top_reasons": FACETS["why_stopped"]["top"]})
        wanted = [n for n in CHILD_FACETS if facets is None or n in facets]
        for name in wanted:
            spec = FACETS[name]
            queries[name] = (f"{cte}\n{load_sql(spec['sql'])}", {**params, "top": spec["top"]})
        return queries
    queries["kpis"] = (f"{cte}\n{load_sql('dashboard_kpis')}", params)
    queries.update(facet_queries(f, facets))
    if f.status:
        closed = [n for n in CLOSED_FACETS if facets is None or n in facets]
        queries.update(facet_queries(replace(f, status=()), closed))
    return queries


def _split_derived(df: pd.DataFrame) -> tuple[dict[str, int], dict[str, pd.DataFrame]]:
    """The one-pass derived result → KPIs and per-facet frames shaped like the direct queries' output."""
    df = df.astype(object).where(df.notna(), None)
    kpis: dict[str, int] = {}
    frames: dict[str, pd.DataFrame] = {}
    for facet, group in df.groupby("facet", sort=False):
        if facet == "kpis":
            row = group.iloc[0]
            kpis.update({"matching_trials": int(row["n"]), "recruiting": int(row["n2"] or 0),
                         "sites": int(row["n3"] or 0), "planned_enrollment": int(row["n4"] or 0)})
            continue
        if facet == "countries_total":
            kpis["countries"] = int(group.iloc[0]["n"])
            continue
        out = pd.DataFrame({"value": group["value"].tolist(), "n": [int(v) for v in group["n"]]})
        if facet == "enrollment":
            out["enrollment_type"] = group["value2"].tolist()
        if facet == "results_by_year":
            out["with_results"] = [int(v or 0) for v in group["n2"]]
        frames[str(facet)] = out
    kpis.setdefault("countries", 0)
    order = ["matching_trials", "recruiting", "sites", "countries", "planned_enrollment"]
    return {k: kpis.get(k, 0) for k in order}, frames


def dashboard(f: Filters, *, db: Database | None = None, facets: list[str] | None = None,
              timeout_ms: int = FACET_TIMEOUT_MS, mode: str = "auto", sequential: bool = False) -> Dashboard:
    """KPIs, funnel and facets for a filter; a facet that fails is named in `errors`.

    mode "auto" uses the derived per-study table when it has been built, else the base tables;
    `sequential=True` runs the queries one after another (the benchmark's straightforward baseline).
    """
    db = db or runtime.get_db()
    mode = resolve_mode(mode, db)
    if mode == "memory":
        try:
            return _memory_dashboard(f, db, facets)
        except TrialLandscapeError as err:
            _log.warning("in-process facet engine unavailable (%s); using SQL over the derived tables", err)
            mode = "derived"
    queries = dashboard_queries(f, mode, facets)
    if sequential:
        results: dict[str, pd.DataFrame | TrialLandscapeError] = {}
        for name, (sql, params) in queries.items():
            try:
                results[name] = db.fetch_df(sql, params, timeout_ms=timeout_ms)
            except TrialLandscapeError as err:
                results[name] = err
    else:
        results = db.fetch_many(queries, timeout_ms=timeout_ms)
    errors: dict[str, str] = {}
    for name, result in results.items():
        if isinstance(result, TrialLandscapeError):
            errors[name] = "timed out" if isinstance(result, QueryTimeout) else str(result)
    kpis: dict[str, int] = {}
    raw: dict[str, pd.DataFrame] = {}
    if mode == "derived":
        derived = results.get("derived")
        if isinstance(derived, pd.DataFrame):
            kpis, raw = _split_derived(derived)
            for name in FACETS:
                if name not in CHILD_FACETS and name not in raw and (facets is None or name in facets):
                    raw[name] = pd.DataFrame({"value": [], "n": []})
            raw["outcome"] = raw.get("status", pd.DataFrame({"value": [], "n": []}))
            closed_df = results.get("closed")
            if isinstance(closed_df, pd.DataFrame):
                _, closed_raw = _split_derived(closed_df)
                empty = pd.DataFrame({"value": [], "n": []})
                raw["outcome"] = closed_raw.get("status", empty)
                raw["why_stopped"] = closed_raw.get("why_stopped", empty)
                raw["results_by_year"] = closed_raw.get(
                    "results_by_year", pd.DataFrame({"value": [], "n": [], "with_results": []}))
            elif "closed" in results:
                for name in CLOSED_FACETS:
                    raw.pop(name, None)
                    errors[name] = errors["closed"]
        else:
            for name in FACETS:
                if name not in CHILD_FACETS:
                    errors[name] = errors.get("derived", "failed")
        for name in CHILD_FACETS:
            if isinstance(results.get(name), pd.DataFrame):
                raw[name] = results[name]  # type: ignore[assignment]
    else:
        kpi_df = results["kpis"]
        if isinstance(kpi_df, pd.DataFrame):
            kpis = {k: int(v or 0) for k, v in kpi_df.iloc[0].to_dict().items()}
        raw = {n: r for n, r in results.items() if n in FACETS and isinstance(r, pd.DataFrame)}
    funnel_df = results["funnel"]
    funnel = []
    if isinstance(funnel_df, pd.DataFrame):
        row = funnel_df.iloc[0].to_dict()
        funnel = [{"stage": FUNNEL_LABELS[k], "key": k, "count": int(row[k]),
                   "active": k == "base" or bool(_is_set(f, k))} for k in ("base", *FUNNEL_FIELDS)]
    out_facets: dict[str, list[dict[str, Any]]] = {}
    for name in FACETS:
        if name in raw and (facets is None or name in facets):
            out_facets[name] = shape_facet(name, raw[name])
    result = Dashboard(f, kpis, funnel, out_facets, errors)
    result.mode = mode
    return result


def _memory_dashboard(f: Filters, db: Database, facets: list[str] | None) -> Dashboard:
    """The dashboard from the in-process facet engine (services/facetstore.py): same numbers as the SQL modes."""
    from services import facetstore

    store = facetstore.store_for(db)
    tops = {name: int(spec["top"]) for name, spec in FACETS.items() if "top" in spec}
    kpis, counts, raw = store.dashboard_frames(f, db, tops)
    funnel = [{"stage": FUNNEL_LABELS[k], "key": k, "count": counts[k],
               "active": k == "base" or bool(_is_set(f, k))} for k in ("base", *FUNNEL_FIELDS)]
    out_facets = {name: shape_facet(name, raw[name]) for name in FACETS
                  if name in raw and (facets is None or name in facets)}
    result = Dashboard(f, kpis, funnel, out_facets, {})
    result.mode = "memory"
    return result


def _is_set(f: Filters, stage: str) -> Any:
    return f.place() if stage == "near" else getattr(f, stage)


def shape_facet(name: str, df: pd.DataFrame) -> list[dict[str, Any]]:
    """Raw facet rows → [{value, label, count, …}] with canonical values and human labels."""
    spec = FACETS[name]
    kind = spec.get("kind")
    if df.empty:
        return []
    df = df.astype(object).where(df.notna(), None)
    if name == "phase":
        counts: dict[str, int] = defaultdict(int)
        for value, n in zip(df["value"], df["n"], strict=True):
            for part in phase_list(value) or ("NONE",):
                counts[part] += int(n)
        order = ["EARLY_PHASE1", "PHASE1", "PHASE2", "PHASE3", "PHASE4", "NA", "NONE"]
        return [{"value": v, "label": "No phase (observational)" if v == "NONE" else label("phase", v),
                 "count": counts[v]} for v in sorted(counts, key=lambda x: order.index(x) if x in order else 99)]
    if kind:
        merged: dict[str | None, int] = defaultdict(int)
        for value, n in zip(df["value"], df["n"], strict=True):
            merged[canonical(kind, value) if value is not None else None] += int(n)
        rows = [{"value": v, "label": label(kind, v), "count": c} for v, c in merged.items()]
        if name == "outcome":
            rows = [r for r in rows if r["value"] in CLOSED_OUTCOMES]
        return sorted(rows, key=lambda r: (-r["count"], str(r["value"])))
    if name in BUCKETS:
        names = BUCKETS[name]
        if name == "enrollment":
            rows_e: list[dict[str, Any]] = []
            for (value, etype), group in df.groupby(["value", df["enrollment_type"].fillna("")], sort=True):
                series = "Actual" if str(etype).upper() == "ACTUAL" else (
                    "Anticipated" if etype else "Type not given")
                rows_e.append({"value": int(value), "label": names[int(value)], "series": series,
                               "count": int(group["n"].sum())})
            merged_e: dict[tuple[int, str], dict[str, Any]] = {}
            for r in rows_e:
                key = (r["value"], r["series"])
                if key in merged_e:
                    merged_e[key]["count"] += r["count"]
                else:
                    merged_e[key] = r
            return sorted(merged_e.values(), key=lambda r: (r["value"], r["series"]))
        out = []
        for value, n in sorted(zip(df["value"], df["n"], strict=True)):
            idx = int(value)
            out.append({"value": idx, "label": "Dates not given" if idx < 0 else names[idx], "count": int(n)})
        return out
    if name == "age_groups":
        order = list(AGE_GROUP_LABELS)
        rows = [{"value": v, "label": AGE_GROUP_LABELS[v], "count": int(n)} for v, n in zip(df["value"], df["n"], strict=True)]
        return sorted(rows, key=lambda r: order.index(r["value"]))
    if name == "results_by_year":
        df = df.sort_values("value")
        return [{"value": int(v), "label": str(int(v)), "count": int(n), "with_results": int(w),
                 "rate": round(int(w) / int(n), 4) if n else 0.0}
                for v, n, w in zip(df["value"], df["n"], df["with_results"], strict=True)]
    if name == "collaboration":
        return [{"value": v, "label": f"{v} → {c}", "collaborator": c, "count": int(n)}
                for v, c, n in zip(df["value"], df["collaborator"], df["n"], strict=True)]
    if name == "start_year":
        df = df.sort_values("value")
        return [{"value": int(v), "label": str(int(v)), "count": int(n)} for v, n in zip(df["value"], df["n"], strict=True)]
    label_col = "label" if "label" in df.columns else "value"
    df = df.assign(_n=[-int(n) for n in df["n"]], _v=[str(v) for v in df["value"]]).sort_values(["_n", "_v"])
    return [{"value": v, "label": str(lab) if lab is not None else "Not given", "count": int(n)}
            for v, lab, n in zip(df["value"], df[label_col], df["n"], strict=True)]


def filter_for_click(f: Filters, facet: str, value: Any) -> Filters:
    """The filter after a click on one bar/slice of a facet (unchanged when that facet is not clickable)."""
    spec = FACETS.get(facet, {})
    target = spec.get("filter")
    if target is None or value is None:
        return f
    if target == "enrollment":
        bucket = ENROLLMENT_RANGES.get(int(value)) if str(value).lstrip("-").isdigit() else None
        return f if bucket is None else replace(f, enrollment_min=bucket[0], enrollment_max=bucket[1])
    if target == "start_year":
        return replace(f, start_from=int(value), start_to=int(value))
    if target == "sex":
        v = str(value).upper()
        return f.with_value("sex", v) if v in ("FEMALE", "MALE") else f
    if target == "phase" and value == "NONE":
        return f
    return f.with_value(target, value if target in ("phase", "status", "funder_class", "study_type", "country",
                                                    "state") else str(value))


DASHBOARD_CACHE_TTL_S = 600
_dashboard_cache: SingleFlightCache[Dashboard] = SingleFlightCache(DASHBOARD_CACHE_TTL_S, max_entries=512)


def cached_dashboard(f: Filters, *, db: Database | None = None) -> Dashboard:
    """dashboard(f) shared by every thread and user: one computation per filter and database for ten minutes.

    Dashboards with a failed facet are not kept, so the next caller tries again. Callers must not change
    the returned object: it is the same one everyone gets.
    """
    db = db or runtime.get_db()
    return _dashboard_cache.get_or_compute((db.url, f), lambda: dashboard(f, db=db),
                                           keep=lambda d: not d.errors)


_summary_cache: SingleFlightCache[Dashboard] = SingleFlightCache(DASHBOARD_CACHE_TTL_S, max_entries=512)


def cached_summary(f: Filters, *, db: Database | None = None) -> Dashboard:
    """KPIs and funnel of a filter as early as they can be had, so a page can show them before the charts.

    On the base tables they are two quick queries of their own (the facets follow through cached_dashboard);
    the in-process engine and the derived table compute everything in one pass, so there the full dashboard
    is returned. Shared like cached_dashboard; do not change the result.
    """
    db = db or runtime.get_db()
    if resolve_mode("auto", db) != "base":
        return cached_dashboard(f, db=db)
    return _summary_cache.get_or_compute((db.url, f), lambda: dashboard(f, db=db, facets=[]),
                                         keep=lambda d: not d.errors)


def dashboard_cache_stats() -> CacheStats:
    """Hits, computations and shared waits of the cross-thread dashboard cache."""
    return _dashboard_cache.stats()
