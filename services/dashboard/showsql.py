"""The "Show the SQL" text: the SQL over AACT's base tables that computes each KPI, the funnel and each chart.

The text is the SQL engine's own (engine.dashboard_queries: the filters' clauses from filters.FILTER_DEFS, the
facet bodies from sql/queries), written while studymesh.base_tables_only() holds, so it reads schema ctgov
(with the views of the MeSH mapping, ctgov.study_mesh_terms and ctgov.therapeutic_area_terms: the conditions
and therapeutic-areas charts, as the page counts them; a condition or area filter reads ctgov.study_mesh_terms
too) and runs in the SQL page, with every bound value written out as a literal (db.with_literals). Where the
page's SQL still reads a derived table the console cannot, the shown SQL may count fewer trials;
`ShownSql.note` says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.dashboard import engine, stats
from services.dashboard.filters import Filters
from services.data import studymesh
from services.data.db import with_literals
from services.inert import one_line

KPIS = "kpis"
FUNNEL = "funnel"
# What the page does to a facet's rows after SQL (stats.shape_facet), in words for the reader of the SQL.
SHAPING = {
    "phase": "A combined phase such as PHASE1/PHASE2 is one row here; the chart counts it in each phase.",
    "outcome": "The chart keeps the closed statuses (completed, terminated, withdrawn, suspended).",
    "enrollment": "`value` is the size bucket (0 = not given, 1 = 1–49, … 7 = 5,000+).",
    "duration": "`value` is the duration bucket (-1 = dates not given, 0 = under a year, … 5 = 10+ years).",
    "sites_per_trial": "`value` is the bucket (0 = no sites listed, 1 = one site, … 5 = 100+ sites).",
    "collaboration_mix": "`value` is the bucket (0 = lead sponsor only, 1, 2 = 2–3, 3 = 4+ collaborators).",
    "conditions": "ctgov.study_mesh_terms holds each trial's MeSH headings: the registry's own (source "
                  "mesh-list) and its condition names resolved to MeSH by the app (source name).",
    "therapeutic_areas": "A trial with MeSH headings in several areas counts in each; "
                         "ctgov.therapeutic_area_terms lists each area's headings (its MeSH tree number and "
                         "everything under it).",
}


# Charts grouped by the MeSH 2024 vocabulary the app ships (headings, therapeutic areas). With the MeSH
# mapping built they read it through the ctgov views; a database without it (a read-only AACT) groups by the
# vocabulary on the base tables, whose SQL must carry every descriptor name as a literal (766,857 characters
# for the areas), far over the SQL page's limit: then no SQL is shown for them, and this note says why.
VOCABULARY_FACETS = frozenset(engine.MESH_FACETS)
VOCABULARY_NOTE = ("This chart groups conditions by the MeSH 2024 vocabulary that ships with the app; this "
                   "database has no MeSH mapping of its studies, so the SQL would have to carry the "
                   "vocabulary itself, too long for the SQL page, and none is shown.")


@dataclass(frozen=True)
class ShownSql:
    """One number's SQL: the statement to paste into the SQL page and what to know when comparing."""

    name: str
    title: str
    sql: str
    note: str = ""


def _title(name: str) -> str:
    if name == KPIS:
        return "Matching trials, recruiting, sites, countries and planned enrollment"
    if name == FUNNEL:
        return "How the filters narrow the trials (each stage's count)"
    return str(stats.FACETS[name]["title"])


def dashboard_sql(f: Filters) -> dict[str, ShownSql]:
    """The SQL of the KPIs ("kpis"), the funnel ("funnel") and every facet of stats.FACETS, for filter `f`."""
    with studymesh.base_tables_only():
        shown = engine.dashboard_queries(f, stats.FACETS)
    page = engine.dashboard_queries(f, stats.FACETS) if studymesh.stored() else shown
    lines = " · ".join(one_line(line, 120) for line in f.describe())
    out = {}
    for name, (sql, params) in shown.items():
        if name in VOCABULARY_FACETS and not studymesh.built():
            out[name] = ShownSql(name, _title(name), "", VOCABULARY_NOTE)
            continue
        notes = [SHAPING.get(name, "")]
        if page[name] != (sql.replace("ctgov.study_mesh_terms", "app.study_mesh"), params):
            notes.append("The page also finds a condition's MeSH headings through condition names resolved "
                         "to MeSH (app.study_mesh), which the SQL page cannot read; this SQL reads the "
                         "registry's own MeSH terms and condition names, so it may count a few trials fewer.")
        if name in engine.CLOSED_FACETS and f.status:
            notes.append("Closed trials: the status filter does not apply to this chart.")
        header = f"-- Trial Landscape: {_title(name)}\n-- Filters: {lines}\n"
        out[name] = ShownSql(name, _title(name), header + with_literals(sql, params or {}).strip(),
                             " ".join(n for n in notes if n))
    return out
