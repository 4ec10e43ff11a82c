"""The URL API's plain half (Datasette's idea): query strings in, JSON-ready payloads out, the OpenAPI.

The filters of a request are the share link's query string, read by the share link's own parser
(`Filters.from_query`, which knows every filter of `filters.FILTER_DEFS` through `filters.PARAMS`); a filter
the link would drop with a notice is refused here instead (HTTP 400 naming it), because an API that quietly
answers another question gives wrong numbers. The API's own parameters (sort, desc, page, rows, sql) are
pydantic models with caps. services/ui/api.py serves these on the app's ASGI server behind the gate and the
limits.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from services import console
from services.dashboard import export, search, stats, trialview
from services.dashboard.filters import PARAMS, SQL_PARAM_PREFIX, Filters, is_view_param
from services.dashboard.showsql import dashboard_sql
from services.inert import one_line
from services.trials import TrialDetail

VERSION = "v1"
MAX_QUERY_CHARS = 16_384  # a share link is far shorter; the SQL text has its own cap (console.MAX_CHARS)
MAX_PARAMS = 200
MAX_ROWS = 1_000
DEFAULT_ROWS = 50
TRIALS_CAP = search.EXPORT_CAP  # the deepest row a page may reach (offset + rows)
SQL_KEY = "sql"


class ApiError(Exception):
    """A request the API refuses: the HTTP status and a sentence (plus details) for the JSON body."""

    def __init__(self, status: int, message: str, details: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.details = [one_line(d, 300) for d in details]

    def body(self) -> dict[str, Any]:
        return {"error": self.message, **({"details": self.details} if self.details else {})}


class TrialsParams(BaseModel):
    """Paging and order of /trials.{json,csv}: the Trials page's own URL parameters."""

    model_config = ConfigDict(extra="ignore")
    sort: str | None = Field(None, max_length=40, description="A sort of the Trials page (default: its own).")
    desc: bool | None = Field(None, description="Descending order (default: as the Trials page).")
    page: int = Field(1, ge=1, le=TRIALS_CAP, description="Page number, from 1.")
    rows: int = Field(DEFAULT_ROWS, ge=1, le=MAX_ROWS, description=f"Trials per page (at most {MAX_ROWS}).")


class SqlParams(BaseModel):
    """The console's query: the text and its `sql.<name>` values, as the SQL page's links carry them."""

    model_config = ConfigDict(extra="ignore")
    sql: str = Field(..., min_length=1, max_length=console.MAX_CHARS, description="One read-only SELECT.")


class FunnelStage(BaseModel):
    stage: str
    key: str
    count: int
    active: bool


class StatsResponse(BaseModel):
    """KPIs, funnel and every facet of the Explore page for the filters, with each number's SQL."""

    query: str = Field(description="The filters as a share-link query string.")
    filters: list[str] = Field(description="The filters in words.")
    kpis: dict[str, int]
    funnel: list[FunnelStage]
    facets: dict[str, list[dict[str, Any]]]
    errors: dict[str, str] = Field(description="Facets that could not be computed in time, with why.")
    sql: dict[str, str] = Field(description="Base-table SQL of each number (kpis, funnel, each facet).")


class TrialsResponse(BaseModel):
    """One page of the Trials table."""

    query: str
    total: int = Field(description="How many trials match.")
    page: int
    rows: int
    pages: int
    sort: str
    desc: bool
    trials: list[dict[str, Any]]


class TrialResponse(BaseModel):
    """One trial's record as the Trials page shows it (contacts left out: people's names stay on the page)."""

    nct_id: str
    url: str
    study: dict[str, Any]
    conditions: list[str]
    keywords: list[str]
    lead_sponsor: str | None
    lead_class: str | None
    collaborators: list[str]
    arms: list[dict[str, Any]]
    interventions: list[dict[str, Any]]
    outcomes: list[dict[str, Any]]
    sites: list[dict[str, Any]]
    inclusion: list[str]
    exclusion: list[str]


class SqlResponse(BaseModel):
    """A console query's rows (at most the console's row cap) and how it ran."""

    columns: list[str]
    rows: list[list[Any]]
    truncated: bool
    truncated_by: str
    elapsed_s: float
    cap: int
    timeout_ms: int


class ErrorResponse(BaseModel):
    error: str
    details: list[str] = []


# ---- requests ----------------------------------------------------------------------------------------------
def grouped(items: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    """Query items (repeated keys allowed) by key, capped in number and size."""
    if len(items) > MAX_PARAMS:
        raise ApiError(400, f"The query has {len(items):,} parameters; the API takes at most {MAX_PARAMS}.")
    if sum(len(k) + len(v) for k, v in items) > MAX_QUERY_CHARS + console.MAX_CHARS:
        raise ApiError(414, "The query string is too long.")
    out: dict[str, list[str]] = {}
    for key, value in items:
        out.setdefault(key, []).append(value)
    return out


def filters_of(params: dict[str, list[str]], own: Sequence[str] = ()) -> Filters:
    """The filters of a request by the share link's parser; ApiError(400) for an unknown parameter or a value
    the share link would drop."""
    unknown = [k for k in params if k not in PARAMS and k not in own and not is_view_param(k)]
    if unknown:
        raise ApiError(400, "Unknown parameter(s): " + ", ".join(one_line(k, 40) for k in unknown[:10])
                       + ". Filters are the share link's: " + ", ".join(PARAMS) + ".")
    size = sum(len(v) for k, vs in params.items() if k in PARAMS for v in vs)
    if size > MAX_QUERY_CHARS:
        raise ApiError(414, f"The filters are {size:,} characters long; at most {MAX_QUERY_CHARS:,}.")
    f, notices = Filters.from_query({k: v for k, v in params.items() if k in PARAMS})
    if notices:
        raise ApiError(400, "Some filters cannot be used as given.", notices)
    return f


def model_of(model: type[BaseModel], params: dict[str, list[str]]) -> Any:
    """The API's own parameters (the last of repeated values) validated by `model`; ApiError(400) naming each
    fault."""
    values = {k: v[-1] for k, v in params.items() if k in model.model_fields}
    try:
        return model.model_validate(values)
    except ValidationError as err:
        details = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors(include_url=False)]
        raise ApiError(400, "Some parameters are not valid.", details) from None


# ---- payloads ----------------------------------------------------------------------------------------------
def stats_payload(f: Filters) -> dict[str, Any]:
    """/stats.json: the Explore page's dashboard (the same cached computation) and each number's SQL."""
    dash = stats.cached_dashboard(f)
    body = StatsResponse(query=f.query_string(), filters=f.describe(), kpis=dash.kpis,
                         funnel=[FunnelStage(**stage) for stage in dash.funnel],
                         facets=dash.facets, errors=dash.errors,
                         sql={k: v.sql for k, v in dashboard_sql(f).items()})
    return body.model_dump(mode="json")


def trials_order(f: Filters, p: TrialsParams) -> tuple[str, bool]:
    """The sort and direction of a Trials request, as the Trials page chooses them; ApiError(400) for
    another."""
    sorts, default = trialview.sorts_for(f, near=f.place() is not None)
    sort = p.sort or default
    if sort not in sorts:
        raise ApiError(400, f"Unknown sort {one_line(sort, 40)!r}; for these filters: {', '.join(sorts)}.")
    return sort, p.desc if p.desc is not None else sort not in ("nearest_miles", "nct_id", "title")


def trials_frame(f: Filters, p: TrialsParams) -> tuple[pd.DataFrame, int, str, bool]:
    """One page of the Trials table with every export column, the total, and the sort used."""
    sort, desc = trials_order(f, p)
    offset = (p.page - 1) * p.rows
    if offset + p.rows > TRIALS_CAP:
        raise ApiError(400, f"Pages reach the first {TRIALS_CAP:,} trials; narrow the filters to read on.")
    total = search.count_trials(f)
    rows = trialview.trials_page(f, sort, desc, p.rows, offset) if offset < total else pd.DataFrame()
    return trialview.export_frame(rows) if len(rows) else rows, total, sort, desc


def trials_payload(f: Filters, p: TrialsParams) -> dict[str, Any]:
    """/trials.json: one page of the Trials table, with the total."""
    frame, total, sort, desc = trials_frame(f, p)
    records = json.loads(export.to_json_bytes(frame)) if len(frame) else []
    return TrialsResponse(query=f.query_string(), total=total, page=p.page, rows=p.rows,
                          pages=max(1, math.ceil(total / p.rows)), sort=sort, desc=desc,
                          trials=records).model_dump(mode="json")


def _records(df: pd.DataFrame | None) -> list[dict[str, Any]]:
    if df is None or df.empty:
        return []
    return list(json.loads(export.to_json_bytes(df)))


def trial_payload(d: TrialDetail) -> dict[str, Any]:
    """/trial/NCT….json: one trial's record."""
    study = json.loads(export.to_json_bytes(pd.DataFrame([d.study])))[0]
    return TrialResponse(
        nct_id=d.nct_id, url=d.url, study=study, conditions=list(d.conditions), keywords=list(d.keywords),
        lead_sponsor=d.lead_sponsor, lead_class=d.lead_class, collaborators=list(d.collaborators),
        arms=_records(d.arms), interventions=_records(d.interventions), outcomes=_records(d.outcomes),
        sites=_records(d.sites.drop(columns=["miles"], errors="ignore")),
        inclusion=[c.full_text for c in d.criteria.inclusion],
        exclusion=[c.full_text for c in d.criteria.exclusion],
    ).model_dump(mode="json")


def sql_values(params: dict[str, list[str]]) -> dict[str, str]:
    """The `sql.<name>` values of a console query (the SQL page's link form)."""
    return {k[len(SQL_PARAM_PREFIX):]: v[-1] for k, v in params.items() if k.startswith(SQL_PARAM_PREFIX)}


def sql_payload(result: console.ConsoleResult) -> dict[str, Any]:
    """/sql.json: the console's rows as JSON."""
    return SqlResponse(**result.to_json(), truncated_by=result.truncated_by, elapsed_s=result.elapsed_s,
                       cap=result.cap, timeout_ms=result.timeout_ms).model_dump(mode="json")


# ---- OpenAPI -----------------------------------------------------------------------------------------------
def _query_parameters(model: type[BaseModel]) -> list[dict[str, Any]]:
    schema = model.model_json_schema()
    return [{"name": name, "in": "query", "required": name in schema.get("required", []),
             "description": prop.get("description", ""), "schema": {k: v for k, v in prop.items()
                                                                   if k not in ("description", "title")}}
            for name, prop in schema["properties"].items()]


def _filter_parameters() -> list[dict[str, Any]]:
    # From the share link's parameter table: a filter added to filters.PARAMS / FILTER_DEFS is listed too.
    return [{"name": key, "in": "query", "required": False, "explode": True, "style": "form",
             "description": f"Filter `{field}` as in the share link; repeat the parameter (or separate "
                            "values by commas) for several values.",
             "schema": {"type": "array", "items": {"type": "string", "maxLength": 200}}}
            for key, field in PARAMS.items()]


def _op(summary: str, params: list[dict[str, Any]], model: type[BaseModel] | None,
        media: str = "application/json") -> dict[str, Any]:
    ok: dict[str, Any] = {"description": "OK", "content": {media: {"schema": {"$ref": f"#/components/schemas/"
                                                                             f"{model.__name__}"}
                                                                  if model else {"type": "string"}}}}
    error = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}}
    return {"get": {"summary": summary, "parameters": params, "responses": {
        "200": ok, "400": {"description": "Refused: the body says why", **error},
        "401": {"description": "This instance has a password: send it as HTTP Basic or Bearer", **error},
        "429": {"description": "Too many requests or wrong passwords: wait (Retry-After)", **error}}}}


def openapi(base: str = "/") -> dict[str, Any]:
    """The OpenAPI 3.1 description of the API (schemas from the pydantic models)."""
    from pydantic.json_schema import models_json_schema

    models = (StatsResponse, TrialsResponse, TrialResponse, SqlResponse, ErrorResponse)
    _, defs = models_json_schema([(m, "serialization") for m in models],
                                 ref_template="#/components/schemas/{model}")
    filters = _filter_parameters()
    prefix = f"{base.rstrip('/')}/api/{VERSION}"
    nct = {"name": "nct_id", "in": "path", "required": True,
           "schema": {"type": "string", "pattern": "^NCT[0-9]{8}$"}}
    sql_values_param = {"name": "sql.<name>", "in": "query", "required": False,
                        "description": "The value of the query's :name parameter (one per parameter).",
                        "schema": {"type": "string"}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "Trial Landscape API", "version": VERSION,
                 "description": "The app's numbers over HTTP. The query string of every route is the "
                                "share link's (copy it from the sidebar). With a password on this instance, "
                                "send it as HTTP Basic (any user name) or as "
                                "`Authorization: Bearer <password>`."},
        "paths": {
            f"{prefix}/stats.json": _op("KPIs, funnel and every facet of the Explore page", filters,
                                        StatsResponse),
            f"{prefix}/trials.json": _op("One page of the Trials table, with the total",
                                         filters + _query_parameters(TrialsParams), TrialsResponse),
            f"{prefix}/trials.csv": _op("One page of the Trials table as CSV (total in X-Total-Count)",
                                        filters + _query_parameters(TrialsParams), None, "text/csv"),
            f"{prefix}/trial/{{nct_id}}.json": _op("One trial's record", [nct], TrialResponse),
            f"{prefix}/sql.json": _op("One read-only SELECT over schema ctgov, as in the SQL page",
                                      [*_query_parameters(SqlParams), sql_values_param], SqlResponse),
            f"{prefix}/openapi.json": {"get": {"summary": "This description", "responses": {"200": {
                "description": "OK"}}}},
        },
        "components": {"schemas": defs["$defs"]},
    }
