"""Dashboard statistics for one filter: KPIs, the narrowing funnel and every facet of the Explore page.

`dashboard(filters)` takes the raw numbers from the engine of the database (services/dashboard/engine.py: in-process
or SQL, chosen once per database) and labels and orders them; with the SQL engine a facet that times out
or fails is reported in `errors` while the rest come back. The CLI (`python -m services stats`), the
Explore page and the assistant all call this one function.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from services.cache import CacheStats, SingleFlightCache
from services.dashboard import boolquery, condition, facetstore, filterplus, landing, sponsorname, stopreason
from services.dashboard.engine import Engine, engine_for
from services.dashboard.engine import prepare_after_import as prepare_engine
from services.dashboard.filters import FUNNEL_STAGES, Filters
from services.data import geo, runtime
from services.data.db import Database
from services.data.normalize import CLOSED_OUTCOMES, PHASES, canonical, label, phase_list

FACET_TIMEOUT_MS = 8_000
TOP = 15

# facet name → (query file, title, filter field a click sets, label kind, extra parameters)
FACETS: dict[str, dict[str, Any]] = {
    "phase": {"sql": "facet_phase", "title": "Phase", "filter": "phase", "kind": "phase"},
    "status": {"sql": "facet_status", "title": "Recruitment status", "filter": "status", "kind": "status"},
    "conditions": {"sql": "facet_conditions", "title": "Top conditions", "filter": "condition", "top": TOP},
    "therapeutic_areas": {"sql": "facet_therapeutic_areas", "title": "Therapeutic areas", "filter": "area"},
    # every spelling read, folded into sponsors (sponsorname.py), then the first TOP kept (shape_facet)
    "lead_sponsors": {"sql": "facet_lead_sponsors", "title": "Top lead sponsors", "filter": "sponsor",
                      "top": 1_000_000},
    "funder_class": {"sql": "facet_funder_class", "title": "Funder class", "filter": "funder_class",
                     "kind": "funder_class"},
    "study_type": {"sql": "facet_study_type", "title": "Study type", "filter": "study_type", "kind": "study_type"},
    "enrollment": {"sql": "facet_enrollment", "title": "Enrollment size (actual vs anticipated)",
                   "filter": "enrollment"},
    "sex": {"sql": "facet_sex", "title": "Sex eligibility", "filter": "sex", "kind": "sex"},
    "age_groups": {"sql": "facet_age_groups", "title": "Age groups accepted", "filter": "age_group"},
    "intervention_types": {"sql": "facet_intervention_types", "title": "Intervention types",
                           "kind": "intervention_type", "filter": "intervention_type"},
    "interventions": {"sql": "facet_interventions", "title": "Top interventions", "filter": "intervention", "top": TOP},
    "duration": {"sql": "facet_duration", "title": "Trial duration (start → primary completion)"},
    "start_year": {"sql": "facet_start_year", "title": "Start year", "filter": "start_year"},
    "sites_per_trial": {"sql": "facet_sites_per_trial", "title": "Sites per trial"},
    # Every spelling is read (top 400), then one bar per ISO code and the first COUNTRY_BARS kept
    # (shape_facet).
    "countries": {"sql": "facet_countries", "title": "Countries", "filter": "country", "top": 400},
    "us_states": {"sql": "facet_us_states", "title": "US states", "filter": "state"},
    "outcome": {"sql": "facet_status", "title": "How closed trials ended", "filter": "status", "kind": "status"},
    "why_stopped": {"sql": "facet_why_stopped", "title": "Top reasons for stopping", "top": 10},
    # every reason read (the query's LIMIT), then grouped by services/dashboard/stopreason.py's cue words
    "stop_categories": {"sql": "facet_why_stopped", "title": "Why trials stopped", "top": 1_000_000},
    "results_by_year": {"sql": "facet_results_by_year", "title": "Results reported, by completion year"},
    "collaboration": {"sql": "facet_collaboration", "title": "Top sponsor collaborations", "filter": "sponsor",
                      "top": 12},
    "collaboration_mix": {"sql": "facet_collaboration_mix", "title": "Collaborators per trial"},
}

COUNTRY_BARS = 25

BUCKETS = {
    "enrollment": ["Not given", "1–49", "50–99", "100–249", "250–499", "500–999", "1,000–4,999", "5,000+"],
    "duration": ["< 1 year", "1–2 years", "2–3 years", "3–5 years", "5–10 years", "10+ years"],
    "sites_per_trial": ["No sites listed", "1 site", "2–5 sites", "6–20 sites", "21–100 sites", "100+ sites"],
    "collaboration_mix": ["Lead sponsor only", "1 collaborator", "2–3 collaborators", "4+ collaborators"],
}
AGE_GROUP_LABELS = {"CHILD": "Children (under 18)", "ADULT": "Adults (18–64)", "OLDER_ADULT": "Older adults (65+)"}
# Enrollment bucket (facet value) → (enrollment_min, enrollment_max) a click sets.
ENROLLMENT_RANGES: dict[int, tuple[int, int | None]] = {
    1: (0, 49), 2: (50, 99), 3: (100, 249), 4: (250, 499), 5: (500, 999), 6: (1000, 4999), 7: (5000, None)}
FUNNEL_LABELS = {"base": "All trials (other filters)", "condition": "Condition", "status": "Status",
                 "age": "Age", "sex": "Sex", "place": "Place"}
PLACE_LABEL_CHARS = 40  # the place stage's label names the place, shortened beyond this


def stage_label(f: Filters, key: str) -> str:
    """A funnel stage's label; the place stage names its place ("Place: Germany", "Place: ≤ 100 mi of
    Boston")."""
    if key != "place":
        return FUNNEL_LABELS[key]
    radius = [f"≤ {f.radius:g} {f.unit} of {f.near}"] if f.near and f.place() else []
    parts = [*f.country, *f.state] + radius
    if not parts:
        return FUNNEL_LABELS[key]
    text = ", ".join(parts)
    return "Place: " + (text if len(text) <= PLACE_LABEL_CHARS else text[:PLACE_LABEL_CHARS - 1] + "…")


@dataclass
class Dashboard:
    """Everything the Explore page shows for one filter."""

    filters: Filters
    kpis: dict[str, int]
    funnel: list[dict[str, Any]]
    facets: dict[str, list[dict[str, Any]]]
    errors: dict[str, str] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)
    mode: str = "sql"  # the engine that computed it: "memory" or "sql"

    def as_dict(self) -> dict[str, Any]:
        return {"query": self.filters.query_string(), "kpis": self.kpis, "funnel": self.funnel,
                "facets": self.facets, "errors": self.errors, "notices": self.notices}


def warm_engine(db: Database | None = None) -> None:
    """Get the database's engine ready now (server start, load test), so that no visitor's request pays for it."""
    engine_for(db or runtime.get_db()).warm()


def landing_stored(db: Database) -> bool:
    """Whether the default filters' dashboard of the current generation is stored (app.landing), so a server whose
    engine is still getting ready shows it without SQL."""
    return landing.load(db, facetstore.generation(db), landing.dashboard_name(FACETS)) is not None


def engine_loading(db: Database | None = None) -> bool:
    """True while the database's engine is still getting ready in this process (the in-process store's load)."""
    return engine_for(db or runtime.get_db()).loading()


def prepare_after_import(db: Database) -> float | None:
    """After an import (CLI, synthetic data): the new generation's start cache and landing view are written now
    (engine.prepare_after_import; seconds taken, None when the engine is SQL), so the next start shows them at once."""
    seconds = prepare_engine(db)
    if seconds is not None:
        eng = engine_for(db)  # the in-process engine stores what a first visitor sees of this generation
        dashboard(Filters(), engine=eng)
        eng.country_names()
    return seconds


def engine(db: Database | None = None) -> dict[str, str]:
    """Which engine computes this database's numbers, with a title and an explanation (Data page, db info)."""
    return engine_for(db or runtime.get_db()).describe()


def dashboard(f: Filters, *, db: Database | None = None, facets: list[str] | None = None,
              timeout_ms: int = FACET_TIMEOUT_MS, engine: Engine | None = None, sequential: bool = False) -> Dashboard:
    """KPIs, funnel and facets for a filter from the database's engine (or the one given); a facet that fails
    is named in `errors`. `sequential=True` runs SQL queries one after another (the benchmark's baseline)."""
    eng = engine or engine_for(db or runtime.get_db())
    frames = eng.dashboard_frames(f, FACETS, facets, timeout_ms=timeout_ms, sequential=sequential)
    funnel = []
    if frames.funnel is not None:
        funnel = [{"stage": stage_label(f, k), "key": k, "count": int(frames.funnel[k]),
                   "active": k == "base" or any(f.place() if n == "near" else getattr(f, n) for n in names)}
                  for k, names in {"base": (), **FUNNEL_STAGES}.items()]
    out_facets = {name: shape_facet(name, frames.raw[name]) for name in FACETS
                  if name in frames.raw and (facets is None or name in facets)}
    return Dashboard(f, frames.kpis, funnel, out_facets, dict(frames.errors), mode=frames.engine or eng.kind)


@dataclass(frozen=True)
class LeftOut:
    """Records a set filter cannot judge (filterplus.MISSING): how many it leaves out, or lets in when asked.
    """

    key: str  # the include=… value
    without: str  # "without a start date"
    names: str  # the filters that leave them out, in words ("start year")
    count: int
    included: bool


def left_out(f: Filters, *, db: Database | None = None, engine: Engine | None = None) -> list[LeftOut]:
    """For each kind of record the set filters cannot judge, how many of the trials that pass every other
    filter they leave out (or, with include=…, let in): the difference of two counts, so both engines agree.
    """
    eng = engine or engine_for(db or runtime.get_db())
    kinds = filterplus.active_missing(f)
    if not kinds:
        return []
    here = eng.count(f)
    out = []
    for m in kinds:
        included = m.key in f.include_missing
        other = tuple(k for k in f.include_missing if k != m.key) if included else (*f.include_missing, m.key)
        left_out = abs(eng.count(replace(f, include_missing=other)) - here)
        out.append(LeftOut(m.key, m.without, m.names, left_out, included))
    return out


def shape_facet(name: str, df: pd.DataFrame) -> list[dict[str, Any]]:
    """Raw facet rows → [{value, label, count, …}] with canonical values and human labels."""
    kind = FACETS[name].get("kind")
    if df.empty:
        return []
    df = df.astype(object).where(df.notna(), None)
    if name == "countries":
        return _countries(df)
    if name == "stop_categories":
        return _stop_categories(df)
    if name == "lead_sponsors":
        folded = sponsorname.merged((str(v), int(n)) for v, n in zip(df["value"], df["n"], strict=True) if v)
        return [{"value": v, "label": v, "count": n} for v, n in folded[:TOP]]
    if name == "phase":
        counts: dict[str, int] = defaultdict(int)
        for value, n in zip(df["value"], df["n"], strict=True):
            for part in phase_list(value) or ("NONE",):
                counts[part] += int(n)
        order = [*PHASES, "NONE"]
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
            by_series: dict[tuple[int, str], int] = defaultdict(int)
            for (value, etype), group in df.groupby(["value", df["enrollment_type"].fillna("")], sort=True):
                series = "Actual" if str(etype).upper() == "ACTUAL" else (
                    "Anticipated" if etype else "Type not given")
                by_series[(int(value), series)] += int(group["n"].sum())
            return [{"value": v, "label": names[v], "series": series, "count": n}
                    for (v, series), n in sorted(by_series.items())]
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


def expansion_note(f: Filters, db: Database | None = None) -> str | None:
    """"“breast cancer”: 120 trials from the named headings + 31 from 8 narrower headings (Include narrower
    headings)": what the condition's expansion through the MeSH tree adds, counted with every other filter.
    None without a condition or without narrower headings to add."""
    if not f.condition:
        return None
    node = condition.parsed(f.condition)
    concepts = [condition.expand(t.text) for t in boolquery.terms(node)]
    more = sum(len(c.descriptors) - len(c.named) for c in concepts if c.named)
    if not more:
        return None
    eng = engine_for(db or runtime.get_db())
    strict = eng.count(replace(f, narrower=False))
    if not f.narrower:
        return (f"“{f.condition}”: {strict:,} trials from the named headings; {more:,} narrower headings "
                "left out (switch on Include narrower headings to add them).")
    added = eng.count(f) - strict
    return (f"“{f.condition}”: {strict:,} trials from the named headings + {added:,} from {more:,} narrower "
            "headings (switch off Include narrower headings to leave them out).")


def _countries(df: pd.DataFrame) -> list[dict[str, Any]]:
    """One bar per ISO code: the spellings of one country ("Korea, Republic of", "South Korea") summed. A
    record names a country once, in its era's spelling, so no study is counted twice (tests/test_terms.py
    checks it)."""
    merged: dict[str, int] = defaultdict(int)
    for value, n in zip(df["value"], df["n"], strict=True):
        if value is not None:
            merged[geo.country_display(str(value))] += int(n)
    ranked = sorted(merged.items(), key=lambda kv: (-kv[1], kv[0]))[:COUNTRY_BARS]
    return [{"value": v, "label": v, "count": c} for v, c in ranked]


def _stop_categories(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Closed trials per category of their reason for stopping (stopreason.py), in the categories' order."""
    merged: dict[str, int] = defaultdict(int)
    for value, n in zip(df["value"], df["n"], strict=True):
        if value is not None and str(value).strip():
            merged[stopreason.category(str(value))] += int(n)
    return [{"value": c, "label": c, "count": merged[c]} for c in stopreason.categories() if merged[c]]


def filter_for_click(f: Filters, facet: str, value: Any) -> Filters:
    """The filter after a click on one bar/slice of a facet (unchanged when that facet is not clickable)."""
    spec = FACETS.get(facet, {})
    target = spec.get("filter")
    if target is None or value is None:
        return f
    if target == "enrollment":
        bucket = ENROLLMENT_RANGES.get(int(value)) if str(value).lstrip("-").isdecimal() else None
        return f if bucket is None else replace(f, enrollment_min=bucket[0], enrollment_max=bucket[1])
    if target == "start_year":
        try:
            new = replace(f, start_from=int(value), start_to=int(value))
        except (TypeError, ValueError, OverflowError):
            return f
    elif target == "sex":
        v = str(value).upper()
        new = f.with_value("sex", v) if v in ("FEMALE", "MALE") else f
    else:  # the phase facet's NONE (no phase) is no phase the link accepts: the check below keeps f
        kept = target in ("phase", "status", "funder_class", "study_type", "country", "state", "age_group",
                         "intervention_type")
        new = f.with_value(target, value if kept else str(value))
    # The selection comes from the browser: a value the share link would refuse (too long, control characters, an
    # unknown status, a year out of range) changes nothing.
    before = f.to_query()
    changed = {k: v for k, v in new.to_query().items() if before.get(k) != v}
    return f if Filters.parsed(changed)[1] else new


DASHBOARD_CACHE_TTL_S = 600
_dashboard_cache: SingleFlightCache[Dashboard] = SingleFlightCache(DASHBOARD_CACHE_TTL_S, max_entries=512)
_left_out_cache: SingleFlightCache[list[LeftOut]] = SingleFlightCache(DASHBOARD_CACHE_TTL_S, max_entries=512)


def cached_left_out(f: Filters, *, db: Database | None = None) -> list[LeftOut]:
    """left_out(f) shared by every thread and user for ten minutes (per database and data generation)."""
    db = db or runtime.get_db()
    return _left_out_cache.get_or_compute((db.url, data_generation(db), f), lambda: left_out(f, db=db))


def data_generation(db: Database | None = None) -> str | None:
    """The data's import generation as the database's engine sees it (the in-process engine's stamp, asked every
    few seconds; None for SQL on base tables, which keeps no stamp). Cache keys carry it, so an import by another
    process shows on every page within seconds, not after a cache's ten minutes."""
    db = db or runtime.get_db()
    if engine_for(db).kind != "memory":
        return None
    return facetstore.generation(db)


def cached_dashboard(f: Filters, *, db: Database | None = None) -> Dashboard:
    """dashboard(f) shared by every thread and user: one computation per filter, database and data generation for
    ten minutes.

    Dashboards with a failed facet are not kept, so the next caller tries again. Callers must not change
    the returned object: it is the same one everyone gets.
    """
    db = db or runtime.get_db()
    return _dashboard_cache.get_or_compute((db.url, data_generation(db), f), lambda: dashboard(f, db=db),
                                           keep=lambda d: not d.errors)


def clear_cache() -> None:
    """Forget every cached dashboard (the next call computes it again)."""
    _dashboard_cache.clear()
    _left_out_cache.clear()


def dashboard_cache_stats() -> CacheStats:
    """Hits, computations and shared waits of the cross-thread dashboard cache."""
    return _dashboard_cache.stats()
