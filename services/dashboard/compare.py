"""Compare two landscapes: filter set A and filter set B, every KPI, funnel stage and facet as A, B and the difference.

Each side's numbers come from the one dashboard computation (`stats.dashboard`, or a cached form of it passed in):
this module only lines the two results up. A value missing from one side of a complete list (phases, statuses,
buckets, US states) is 0 there; a value missing from one side's *top-N* list (conditions, sponsors, countries…)
is unknown there (outside that side's top), never a made-up 0.

The share link holds A as the usual parameters and B as the same parameters with the prefix `b.`
(`b.condition=…`), see `b_query` and `b_from_query`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from services.dashboard.filters import COMPARE_PARAM_PREFIX, PARAMS, Filters, unknown_notices
from services.dashboard.stats import FACETS, Dashboard

KPIS: tuple[tuple[str, str], ...] = (
    ("matching_trials", "Matching trials"), ("recruiting", "Recruiting now"), ("sites", "Sites"),
    ("countries", "Countries"), ("planned_enrollment", "Planned enrollment"))

# What a row's share is a share of, by section kind.
SHARE_OF_MATCHING = "% of matching trials"
SHARE_OF_CLOSED = "% of closed trials matching the other filters"
SHARE_WITH_RESULTS = "% of that year's finished trials with results posted"
SHARE_OF_FUNNEL = "% of the funnel's first stage"
SHARE_OF_KPI = "% of matching trials (recruiting only)"


@dataclass(frozen=True)
class Row:
    """One line of the comparison: a value of a section, with both sides' counts and shares (None = unknown)."""

    section: str  # "kpis", "funnel" or a facet name
    title: str  # the section's title as the Explore page shows it
    value: Any  # the facet value (a click value), the KPI key or the funnel stage key
    label: str
    a_count: int | None
    b_count: int | None
    a_share: float | None  # 0..1
    b_share: float | None
    share_of: str  # what the shares are shares of ("" when the row has none)
    key: Any = None  # what identifies the row within its section (value; (bucket, series) or (lead, collaborator))

    @property
    def diff_count(self) -> int | None:
        """B − A in counts (None when either side is unknown)."""
        return None if self.a_count is None or self.b_count is None else self.b_count - self.a_count

    @property
    def diff_pp(self) -> float | None:
        """B − A in percentage points of the shares (None when either share is unknown)."""
        return None if self.a_share is None or self.b_share is None else round(100 * (self.b_share - self.a_share), 2)


@dataclass
class Comparison:
    """Both sides' dashboards and the rows that line them up."""

    a: Dashboard
    b: Dashboard
    rows: list[Row] = field(default_factory=list)

    @property
    def errors(self) -> dict[str, str]:
        """Sections that could not be computed on either side, with the reason (side named)."""
        out: dict[str, str] = {}
        for side, d in (("A", self.a), ("B", self.b)):
            for name, text in d.errors.items():
                out[name] = f"{out[name]}; {side}: {text}" if name in out else f"{side}: {text}"
        return out

    def section(self, name: str) -> list[Row]:
        """The rows of one section, in table order."""
        return [r for r in self.rows if r.section == name]


def compare(fa: Filters, fb: Filters, dashboard: Callable[[Filters], Dashboard], *, concurrent: bool = True
            ) -> Comparison:
    """Both sides' dashboards (through `dashboard`, e.g. stats.cached_dashboard) lined up as comparison rows.

    The two sides are computed at the same time when `concurrent` (the SQL engine waits on the database, the
    in-process engine's numpy work releases the interpreter lock for most of its time).
    """
    if concurrent and fa != fb:
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="compare") as pool:
            fut_b = pool.submit(dashboard, fb)
            a = dashboard(fa)
            b = fut_b.result()
    else:
        a = dashboard(fa)
        b = a if fa == fb else dashboard(fb)
    return Comparison(a, b, comparison_rows(a, b))


def _share(n: int | None, base: int | None) -> float | None:
    if n is None or not base:
        return None
    return n / base


def _kpi_rows(a: Dashboard, b: Dashboard) -> list[Row]:
    rows = []
    for key, label in KPIS:
        na, nb = a.kpis.get(key), b.kpis.get(key)
        if key == "recruiting":
            sa, sb = _share(na, a.kpis.get("matching_trials")), _share(nb, b.kpis.get("matching_trials"))
            share_of = SHARE_OF_KPI
        else:
            sa = sb = None
            share_of = ""
        rows.append(Row("kpis", "Key figures", key, label, na, nb, sa, sb, share_of, key))
    return rows


def _funnel_rows(a: Dashboard, b: Dashboard) -> list[Row]:
    by_a = {s["key"]: s for s in a.funnel}
    by_b = {s["key"]: s for s in b.funnel}
    base_a = int(a.funnel[0]["count"]) if a.funnel else None
    base_b = int(b.funnel[0]["count"]) if b.funnel else None
    rows = []
    for key in dict.fromkeys([*by_a, *by_b]):
        stage = by_a.get(key) or by_b[key]
        na = int(by_a[key]["count"]) if key in by_a else None
        nb = int(by_b[key]["count"]) if key in by_b else None
        rows.append(Row("funnel", "How the filters narrow the trials", key, str(stage["stage"]), na, nb,
                        _share(na, base_a), _share(nb, base_b), SHARE_OF_FUNNEL, key))
    return rows


def _key(facet: str, r: Mapping[str, Any]) -> Any:
    if facet == "enrollment":
        return (r["value"], r["series"])
    if facet == "collaboration":
        return (r["value"], r["collaborator"])
    return r["value"]


def _label(facet: str, r: Mapping[str, Any]) -> str:
    if facet == "enrollment":
        return f"{r['label']} · {r['series']}"
    return str(r["label"])


def is_top_list(facet: str) -> bool:
    """Whether a facet lists only its top values (a value absent from one side is then unknown there, not 0)."""
    return "top" in FACETS[facet]


def _facet_rows(facet: str, a: Dashboard, b: Dashboard) -> list[Row]:
    title = FACETS[facet]["title"]
    rows_a, rows_b = a.facets.get(facet, []), b.facets.get(facet, [])
    by_a = {_key(facet, r): r for r in rows_a}
    by_b = {_key(facet, r): r for r in rows_b}
    absent: int | None = None if is_top_list(facet) else 0
    if facet == "outcome":
        base_a: int | None = sum(int(r["count"]) for r in rows_a)
        base_b: int | None = sum(int(r["count"]) for r in rows_b)
        share_of = SHARE_OF_CLOSED
    elif facet == "why_stopped":  # a reason may be given at any status: no complete count to share it of
        base_a = base_b = None
        share_of = ""
    else:
        base_a, base_b = a.kpis.get("matching_trials"), b.kpis.get("matching_trials")
        share_of = SHARE_OF_MATCHING
    keys = list(by_a) + [k for k in by_b if k not in by_a]
    if facet in ("start_year", "results_by_year", "enrollment", "duration", "sites_per_trial", "collaboration_mix"):
        keys.sort()  # ordered categories (years, size buckets): in their order, whichever side has them
    out = []
    for k in keys:
        ra, rb = by_a.get(k), by_b.get(k)
        any_row = ra or rb
        assert any_row is not None
        na = int(ra["count"]) if ra else absent
        nb = int(rb["count"]) if rb else absent
        if facet == "results_by_year":  # the share of each year's finished trials that posted results
            sa = float(ra["rate"]) if ra else None
            sb = float(rb["rate"]) if rb else None
            out.append(Row(facet, title, any_row["value"], _label(facet, any_row), na, nb, sa, sb, SHARE_WITH_RESULTS,
                           k))
            continue
        out.append(Row(facet, title, any_row["value"], _label(facet, any_row), na, nb,
                       _share(na, base_a), _share(nb, base_b), share_of if base_a or base_b else "", k))
    return out


def comparison_rows(a: Dashboard, b: Dashboard) -> list[Row]:
    """Every KPI, funnel stage and facet value of two dashboards, side by side (Explore's order)."""
    rows = _kpi_rows(a, b) + _funnel_rows(a, b)
    for facet in FACETS:
        if facet in a.facets or facet in b.facets:
            rows += _facet_rows(facet, a, b)
    return rows


COLUMNS = ("section", "title", "value", "label", "a_trials", "a_share_pct", "b_trials", "b_share_pct",
           "difference_trials", "difference_pp", "share_of")


def _pct(share: float | None) -> float | None:
    return None if share is None else round(100 * share, 2)


def comparison_frame(c: Comparison) -> pd.DataFrame:
    """The comparison as a table (one row per value; shares in percent; empty cells where a number is unknown),
    headed by one row per filter set that says what it holds — the export."""
    head = [{"section": "filters", "title": "Filter set", "value": side, "label": "; ".join(d.filters.describe()),
             "share_of": d.filters.query_string()} for side, d in (("A", c.a), ("B", c.b))]
    body = [{"section": r.section, "title": r.title, "value": None if r.value is None else str(r.value), "label": r.label, "a_trials": r.a_count,
             "a_share_pct": _pct(r.a_share), "b_trials": r.b_count, "b_share_pct": _pct(r.b_share),
             "difference_trials": r.diff_count, "difference_pp": r.diff_pp, "share_of": r.share_of}
            for r in c.rows]
    df = pd.DataFrame(head + body, columns=list(COLUMNS))
    for col in ("a_trials", "b_trials", "difference_trials"):
        df[col] = df[col].astype("Int64")
    return df


def display_frame(table: pd.DataFrame) -> pd.DataFrame:
    """The comparison table for reading on the page: numbers as text with thousands separators, "—" where
    unknown, B − A signed; without the two filter-set rows (the page states A and B above)."""
    body = table[table["section"] != "filters"]

    def num(v: Any, fmt: str) -> str:
        return "—" if v is None or pd.isna(v) else format(v, fmt)

    return pd.DataFrame({
        "Section": body["title"], "Value": body["label"],
        "A": [num(v, ",") for v in body["a_trials"]], "A %": [num(v, ".1f") for v in body["a_share_pct"]],
        "B": [num(v, ",") for v in body["b_trials"]], "B %": [num(v, ".1f") for v in body["b_share_pct"]],
        "B − A": [num(v, "+,") for v in body["difference_trials"]],
        "B − A (pp)": [num(v, "+.1f") for v in body["difference_pp"]],
        "Share of": body["share_of"].fillna(""),
    })


# ---- filter set B in the URL ----------------------------------------------------------------
def b_query(fb: Filters) -> dict[str, list[str]]:
    """Filter set B as URL parameters: the usual ones with the `b.` prefix (defaults left out)."""
    return {COMPARE_PARAM_PREFIX + k: v for k, v in fb.to_query().items()}


def is_b_param(key: str) -> bool:
    """Whether a URL parameter belongs to filter set B."""
    return key.startswith(COMPARE_PARAM_PREFIX)


def b_from_query(params: Mapping[str, Any]) -> tuple[Filters, list[str]]:
    """Filter set B from the `b.`-prefixed URL parameters (others ignored); notices name what was dropped and why."""
    own: dict[str, Any] = {}
    unknown: list[str] = []
    for key, raw in params.items():
        if not is_b_param(str(key)):
            continue
        name = str(key)[len(COMPARE_PARAM_PREFIX):]
        if name in PARAMS:
            own[name] = raw
        else:  # view parameters (map mode, sort, …) mean nothing for a filter set
            unknown.append(str(key))
    f, more = Filters.from_query(own)
    return f, ["Filter set B: " + n for n in unknown_notices(unknown) + more]


def b_words(fb: Filters) -> str:
    """What filter set B holds, in words (for the share link's caption)."""
    return "filter set B (" + "; ".join(fb.describe()) + ")"
