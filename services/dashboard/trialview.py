"""Shaping for the Trials page: the table with human labels, a trial's facts and sites, side-by-side comparison."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from services import inert
from services.data import geo
from services.data.normalize import canonical, label
from services.data.provenance import NOT_IN_COPY, Provenance
from services.freshness import last_update_of, status_note
from services.trials import TrialDetail, ctgov_url

MAX_COMPARE = 4
PAGE_SIZES = (25, 50, 100)
MAX_LINK_IDS = max(PAGE_SIZES)  # ids read from a link's compare or sel parameter (a page's ticked rows at most)
SORT_LABELS = {
    "start_date": "Start date", "nct_id": "NCT id", "title": "Title", "phase": "Phase", "status": "Status",
    "lead_sponsor": "Lead sponsor", "enrollment": "Enrollment", "sites": "Number of sites",
    "nearest_miles": "Nearest site", "relevance": "Relevance",
}
RELEVANCE_NOTE = ("most relevant first: the full-text rank of each trial's title, conditions, "
                  "keywords, MeSH terms and summary for the condition and its synonyms, fused with how its own "
                  "conditions match it.")
TABLE_COLUMNS = ["link", "title", "phase", "status", "conditions", "lead_sponsor", "enrollment", "start_date",
                 "sites", "nearest"]


def _text(value: Any) -> str:
    try:
        if pd.isna(value):
            return ""
    except (TypeError, ValueError):
        pass
    return str(value)


def distance(miles: float | None, unit: str = "mi") -> float | None:
    """Miles in the filter's unit (km when unit is "km"), rounded to 0.1."""
    if miles is None or pd.isna(miles):
        return None
    return round(float(miles) * geo.per_mile(unit), 1)


def trials_table(df: pd.DataFrame, unit: str = "mi") -> pd.DataFrame:
    """Rows of search.matching_trials for display: labels instead of enums, a link per NCT id, distances."""
    if df.empty:
        return pd.DataFrame(columns=["nct_id", *TABLE_COLUMNS])
    return pd.DataFrame({
        "nct_id": df["nct_id"],
        "link": [ctgov_url(n) for n in df["nct_id"]],
        "title": df["title"].map(_text),
        "phase": [label("phase", p) if _text(p) else "—" for p in df["phase"]],
        "status": [label("status", s) for s in df["status"]],
        "conditions": df["conditions"].map(_text),
        "lead_sponsor": df["lead_sponsor"].map(_text),
        "enrollment": pd.array([None if pd.isna(e) else int(e) for e in df["enrollment"]], dtype="Int64"),
        "start_date": [d if isinstance(d, dt.date) else None for d in df["start_date"]],
        "sites": pd.array([int(s) for s in df["sites"]], dtype="Int64"),
        "nearest": [distance(m, unit) for m in df["nearest_miles"]],
    })


def export_frame(df: pd.DataFrame) -> pd.DataFrame:
    """The matching-trials rows for download: every column, canonical enums plus readable labels and a link."""
    out = df.copy()
    out.insert(1, "url", [ctgov_url(n) for n in out["nct_id"]])
    if "phase" in out:
        out["phase_label"] = _labels(out["phase"], lambda p: label("phase", p) if _text(p) else "")
    if "status" in out:
        out["status_label"] = _labels(out["status"], lambda s: label("status", s))
    return out


def _labels(values: Sequence[Any], spell: Callable[[Any], str]) -> list[str]:
    """spell(value) for each value, computed once per distinct value (an export repeats a few phases and statuses
    over tens of thousands of rows)."""
    memo: dict[Any, str] = {}
    return [memo[v] if v in memo else memo.setdefault(v, spell(v)) for v in values]


def _date(value: Any, kind: Any = None) -> str:
    if not isinstance(value, dt.date):
        return "—"
    text = value.isoformat()
    estimated = canonical("date_type", _text(kind)) in ("ESTIMATED", "ANTICIPATED")
    return f"{text} (estimated)" if estimated else text


def _age(value: Any) -> str:
    text = _text(value).strip()
    return "no limit" if not text or text.upper() in ("N/A", "NA") else text


def age_range(study: dict[str, Any]) -> str:
    """"18 Years to no limit" style age range from the eligibility fields."""
    lo, hi = _age(study.get("minimum_age")), _age(study.get("maximum_age"))
    if lo == "no limit" and hi == "no limit":
        return "Any age"
    if hi == "no limit":
        return f"{lo} and older"
    if lo == "no limit":
        return f"Up to {hi}"
    return f"{lo} to {hi}"


def healthy_text(value: Any) -> str:
    """Whether healthy volunteers are accepted, in words."""
    if _text(value) == "":
        return "Not stated"
    if isinstance(value, str):
        value = value.strip().lower() in ("true", "t", "yes", "accepts healthy volunteers")
    return "Yes" if bool(value) else "No"


def ages_text(study: dict[str, Any], prov: Provenance | None = None) -> str:
    """The age range; where our source did not carry the limits, 'not in this copy …', or the edges of the age groups
    it carried (a site CSV's adult-only trial: 18 to 64 years) said to be only that."""
    if prov is None or not prov.lacks_field("ages"):
        return age_range(study)
    if not _text(study.get("minimum_age")).strip() and not _text(study.get("maximum_age")).strip():
        return NOT_IN_COPY
    return f"{age_range(study)} (the edges of its age groups; the exact limits are not in this copy)"


def sex_text(study: dict[str, Any], prov: Provenance | None = None) -> str:
    """The sex limit in words, or 'not in this copy …' when our source did not carry it."""
    if _text(study.get("gender")):
        return label("sex", study.get("gender"))
    return NOT_IN_COPY if prov is not None and prov.lacks_field("sex") else "Not stated"


def healthy_volunteers_text(study: dict[str, Any], prov: Provenance | None = None) -> str:
    """Whether healthy volunteers are accepted, or 'not in this copy …'."""
    value = study.get("healthy_volunteers")
    if _text(value) == "" and prov is not None and prov.lacks_field("healthy_volunteers"):
        return NOT_IN_COPY
    return healthy_text(value)


def key_facts(d: TrialDetail, unit: str = "mi") -> list[tuple[str, str]]:
    """(label, value) pairs for the top of the detail view."""
    s = d.study
    enrollment = _text(s.get("enrollment"))
    if enrollment:
        kind = canonical("enrollment_type", _text(s.get("enrollment_type")))
        enrollment = f"{int(float(enrollment)):,}" + (" (estimated)" if kind in ("ESTIMATED", "ANTICIPATED") else
                                                      " (actual)" if kind == "ACTUAL" else "")
    prov = d.provenance
    lacks = prov.lacks if prov is not None else frozenset()
    facts = [
        ("Phase", label("phase", s.get("phase")) if _text(s.get("phase")) else
         NOT_IN_COPY if "phase" in lacks else "Not applicable"),
        ("Status", label("status", s.get("status"))),
        ("Study type", label("study_type", s.get("study_type"))),
        ("Enrollment", enrollment or (NOT_IN_COPY if "enrollment" in lacks else "—")),
        ("Lead sponsor", d.lead_sponsor or "—"),
        ("Sites", (NOT_IN_COPY if not len(d.sites) and "sites" in lacks else f"{len(d.sites):,}")
         + (f" in {', '.join(d.countries[:5])}" if d.countries else "")
         + (f" and {len(d.countries) - 5} more countries" if len(d.countries) > 5 else "")),
        ("Ages", ages_text(s, prov)),
        ("Sex", sex_text(s, prov)),
        ("Healthy volunteers", healthy_volunteers_text(s, prov)),
    ]
    nearest = distance(d.nearest_miles, unit)
    if nearest is not None:
        facts.append(("Nearest site", f"{nearest:,.1f} {unit}"))
    if _text(s.get("why_stopped")):
        facts.append(("Why stopped", _text(s.get("why_stopped"))))
    return facts


def status_freshness(d: TrialDetail, today: dt.date | None = None) -> str | None:
    """The "status may be out of date — last updated …" mark for an open trial whose status looks stale, else None."""
    s = d.study
    return status_note(s.get("status"), primary_completion=s.get("primary_completion_date"),
                       last_update=last_update_of(s), today=today)


def key_dates(d: TrialDetail) -> list[tuple[str, str]]:
    """(label, date) pairs from registration to the last update, marking estimated dates."""
    s = d.study
    return [
        ("First posted", _date(s.get("study_first_posted_date"))),
        ("Start", _date(s.get("start_date"), s.get("start_date_type"))),
        ("Primary completion", _date(s.get("primary_completion_date"), s.get("primary_completion_date_type"))),
        ("Study completion", _date(s.get("completion_date"), s.get("completion_date_type"))),
        ("Results first posted", _date(s.get("results_first_posted_date"))),
        ("Last update posted", _date(s.get("last_update_posted_date"))),
    ]


def design_facts(d: TrialDetail) -> list[tuple[str, str]]:
    """Design fields that are set (allocation, model, purpose, masking …) with readable values."""
    s = d.study
    names = [("allocation", "Allocation"), ("intervention_model", "Intervention model"),
             ("observational_model", "Observational model"), ("primary_purpose", "Primary purpose"),
             ("masking", "Masking"), ("time_perspective", "Time perspective")]
    return [(title, _text(s.get(key)).replace("_", " ").capitalize()) for key, title in names if _text(s.get(key))]


def arms_table(d: TrialDetail) -> pd.DataFrame:
    """Arms with type, description and interventions, for display."""
    if d.arms.empty:
        return pd.DataFrame(columns=["arm", "type", "interventions", "description"])
    return pd.DataFrame({
        "arm": d.arms["title"].map(_text),
        "type": [_text(t).replace("_", " ").capitalize() for t in d.arms["group_type"]],
        "interventions": d.arms["interventions"].map(_text),
        "description": d.arms["description"].map(_text),
    })


def interventions_table(d: TrialDetail) -> pd.DataFrame:
    """Interventions with type, other names and description, for display."""
    if d.interventions.empty:
        return pd.DataFrame(columns=["intervention", "type", "other_names", "description"])
    return pd.DataFrame({
        "intervention": d.interventions["name"].map(_text),
        "type": [label("intervention_type", t) if _text(t) else "" for t in d.interventions["intervention_type"]],
        "other_names": d.interventions["other_names"].map(_text),
        "description": d.interventions["description"].map(_text),
    })


def outcomes_by_type(d: TrialDetail) -> dict[str, pd.DataFrame]:
    """Outcome measures grouped as {"Primary": …, "Secondary": …, "Other": …} (empty groups left out)."""
    out: dict[str, pd.DataFrame] = {}
    if d.outcomes.empty:
        return out
    kinds = [canonical("outcome_type", _text(t)) or "OTHER" for t in d.outcomes["outcome_type"]]
    groups = {"PRIMARY": "Primary", "SECONDARY": "Secondary"}
    frame = pd.DataFrame({
        "group": [groups.get(k, "Other") for k in kinds],
        "measure": d.outcomes["measure"].map(_text),
        "time_frame": d.outcomes["time_frame"].map(_text),
        "description": d.outcomes["description"].map(_text),
    })
    for name in ("Primary", "Secondary", "Other"):
        part = frame[frame["group"] == name].drop(columns="group").reset_index(drop=True)
        if len(part):
            out[name] = part
    return out


def sites_table(d: TrialDetail, unit: str = "mi") -> pd.DataFrame:
    """The trial's sites (nearest first when a place is set) with distance in the filter's unit."""
    cols = ["distance", "facility", "city", "state", "country", "status"]
    if d.sites.empty:
        return pd.DataFrame(columns=cols)
    return pd.DataFrame({
        "distance": [distance(m, unit) for m in d.sites["miles"]],
        "facility": d.sites["facility"].map(_text),
        "city": d.sites["city"].map(_text),
        "state": d.sites["state"].map(_text),
        "country": d.sites["country"].map(_text),
        "status": [label("status", s) if _text(s) else "" for s in d.sites["status"]],
    })[cols]


def _outline(items: Sequence[str], limit: int = 3, chars: int = 160) -> str:
    items = [i if len(i) <= chars else i[: chars - 1].rstrip() + "…" for i in items if i]
    if not items:
        return "—"
    more = f" (+{len(items) - limit} more)" if len(items) > limit else ""
    return "; ".join(items[:limit]) + more


def comparison(details: Sequence[TrialDetail], unit: str = "mi") -> pd.DataFrame:
    """Side-by-side table: one row per aspect, one column per trial (its NCT id)."""
    rows: dict[str, dict[str, str]] = {}
    for d in details:
        s = d.study
        facts = dict(key_facts(d, unit))
        dates = dict(key_dates(d))
        primary = outcomes_by_type(d).get("Primary")
        criteria = (f"{len(d.criteria.inclusion)} inclusion, {len(d.criteria.exclusion)} exclusion"
                    if d.criteria.all else NOT_IN_COPY
                    if d.provenance is not None and d.provenance.lacks_field("criteria") else "Not given")
        design = " / ".join(v for k, v in design_facts(d) if k in ("Allocation", "Masking"))
        column = {
            "Title": _text(s.get("title")),
            "Phase": facts["Phase"],
            "Status": facts["Status"] + (" (status may be out of date)" if status_freshness(d) else ""),
            "Conditions": _outline(list(d.conditions)),
            "Interventions": _outline([_text(x) for x in d.interventions.get("name", pd.Series(dtype=str))]),
            "Lead sponsor": facts["Lead sponsor"],
            "Collaborators": _outline(list(d.collaborators)),
            "Enrollment": facts["Enrollment"],
            "Start": dates["Start"],
            "Primary completion": dates["Primary completion"],
            "Sites": facts["Sites"],
            "Nearest site": facts.get("Nearest site", "—"),
            "Ages": facts["Ages"],
            "Sex": facts["Sex"],
            "Healthy volunteers": facts["Healthy volunteers"],
            "Allocation / masking": design or "—",
            "Primary outcomes": _outline(list(primary["measure"])) if primary is not None else "—",
            "Eligibility criteria": criteria,
            "Results posted": "Yes" if s.get("has_results") else "No",
            "ClinicalTrials.gov": d.url,
        }
        for aspect, value in column.items():
            rows.setdefault(aspect, {})[d.nct_id] = value
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "aspect"
    return table.reindex(columns=[d.nct_id for d in details]).fillna("—")


def comparison_cells(table: pd.DataFrame) -> pd.DataFrame:
    """The comparison as Markdown cells for st.table: every value literal, the registry row as our own links."""
    out = table.map(inert.md_line)
    if "ClinicalTrials.gov" in out.index:
        out.loc["ClinicalTrials.gov"] = [inert.ctgov_link(str(n)) for n in out.columns]
    return out


def parse_compare(value: str | Sequence[str] | None) -> tuple[list[str], list[str]]:
    """NCT ids from a compare parameter ("NCT1,NCT2"): (valid ids in order without repeats, rejected texts), read
    from the first MAX_LINK_IDS non-empty parts only (a link is untrusted: it may hold any number of them)."""
    from services.dashboard.search import parse_nct_id
    from services.errors import BadInput

    items = [value] if isinstance(value, str) else list(value or [])
    parts = [part for item in items for part in str(item).split(",") if part.strip()]
    ids: dict[str, None] = {}
    bad: list[str] = []
    for part in parts[:MAX_LINK_IDS]:
        try:
            ids[parse_nct_id(part)] = None
        except BadInput:
            bad.append(part.strip()[:30])
    return list(ids), bad


def trials_page(f: Any, sort: str, descending: bool, limit: int, offset: int) -> pd.DataFrame:
    """One page of matching trials (positional arguments, so it can be cached by ui_state.cached)."""
    from services.dashboard.search import matching_trials

    return matching_trials(f, sort=sort, descending=descending, limit=limit, offset=offset)


def export_rows(f: Any, sort: str, descending: bool) -> pd.DataFrame:
    """Every matching trial up to search.EXPORT_CAP rows, in the table's order, ready for download."""
    from services.dashboard.search import EXPORT_CAP, matching_trials
    from services.data.provenance import annotate_export

    return annotate_export(export_frame(matching_trials(f, sort=sort, descending=descending, limit=EXPORT_CAP,
                                                        offset=0)))


def registry_markdown(text: str) -> str:
    """Registry prose (API v2 text arrives with Markdown escapes such as ``\\*``) shown literally."""
    from services.eligibility.parser import unescape_markdown

    return inert.md(unescape_markdown(text))


PREVIEW_CHARS = 1_500  # a longer summary shows its start and the rest behind "Read the whole summary"


def preview(text: str, limit: int = PREVIEW_CHARS) -> tuple[str, str]:
    """A long text's start (cut at the last space before `limit`, with an ellipsis) and the whole text; a short
    one whole, with nothing more."""
    if len(text) <= limit:
        return text, ""
    head = text[:limit].rsplit(" ", 1)[0] if " " in text[:limit] else text[:limit]
    return head + " …", text


def criteria_markdown(items: Sequence[Any]) -> str:
    """A numbered Markdown list of parsed criteria, sub-items indented under their criterion."""
    lines = []
    for c in items:
        lines.append(f"{c.number}. {inert.md(c.text)}")
        lines.extend(f"    - {inert.md(child)}" for child in c.children)
    return "\n".join(lines)


# Table column of each sort key (nct_id and title sort their own leading columns).
SORT_COLUMN = {"start_date": "start_date", "phase": "phase", "status": "status", "lead_sponsor": "lead_sponsor",
               "enrollment": "enrollment", "sites": "sites", "nearest_miles": "nearest"}


def sorts_for(f: Any, *, near: bool) -> tuple[list[str], str]:
    """The Trials table's sorts for a filter (relevance first when it has a condition text, the nearest site only
    with a place) and the default: relevance with a text, else the nearest site with a place, else start date."""
    from services.dashboard.relevance import RELEVANCE, text_of

    sorts = [k for k in SORT_LABELS if k != RELEVANCE and (k != "nearest_miles" or near)]
    if text_of(f):
        return [RELEVANCE, *sorts], RELEVANCE
    return sorts, "nearest_miles" if near else sorts[0]


def table_column_order(sort: str, *, near: bool) -> list[str]:
    """The Trials table's columns: NCT id, the sorted column (so it is in view without scrolling), the title,
    the rest, and last the small link out to ClinicalTrials.gov."""
    rest = [c for c in TABLE_COLUMNS if c not in ("link", "title") and (near or c != "nearest")]
    if near and "nearest" in rest:  # with a place, the distance leads as before
        rest.remove("nearest")
        rest.insert(0, "nearest")
    sorted_col = SORT_COLUMN.get(sort)
    if sorted_col in rest:
        rest.remove(sorted_col)
    lead = [sorted_col] if sorted_col is not None and (near or sorted_col != "nearest") else []
    return ["nct_id", *lead, "title", *rest, "link"]
