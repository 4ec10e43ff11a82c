"""Trial search over the database: lists for widgets, matching trials, one trial's details."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from services.dashboard.engine import PAGE_CAP, Engine, engine_for, ids_cte, near_cte
from services.dashboard.filters import Filters
from services.data import geo, runtime
from services.data.db import Database, load_sql
from services.data.provenance import lookup as provenance_lookup
from services.eligibility.parser import parse_criteria
from services.errors import BadInput, TrialLandscapeError
from services.trials import TrialDetail


def country_names(db: Database | None = None) -> list[str]:
    """Countries that have studies, most studies first, one name per ISO code (geo.country_display)."""
    names = engine_for(db or runtime.get_db()).country_names()
    return list(dict.fromkeys(geo.country_display(n) for n in names))


EXPORT_CAP = PAGE_CAP
# A long page (an export) is read in up to PAGE_PARTS parts of at least PART_ROWS trials at once, one database
# connection each: the per-trial lookups of trials_page.sql then use every core the database has.
PAGE_PARTS = 4
PART_ROWS = 10_000
EXPORT_TABLE_ROWS = 1_000  # from this many trials on, rows come from the engine's export table if it has one


def matching_trials(f: Filters, *, sort: str = "start_date", descending: bool = True, limit: int = 50,
                    offset: int = 0, db: Database | None = None, engine: Engine | None = None) -> pd.DataFrame:
    """One page of the trials matching a filter, sorted by a whitelisted column: the engine of the database
    picks and orders the page's NCT ids, then their rows are read for display."""
    db = db or runtime.get_db()
    engine = engine or engine_for(db)
    ids = engine.trial_page(f, sort=sort, descending=descending, limit=limit, offset=offset)
    # A long list (an export) comes from the in-process engine's export table: one row per trial, built once
    # per load, where trials_page.sql aggregates three lists per trial (2 s for 66,000 at 575,000 studies).
    from_table = getattr(engine, "export_rows", None)
    rows = from_table(f, ids) if from_table is not None and len(ids) >= EXPORT_TABLE_ROWS else None
    if rows is not None:
        return rows
    parts = max(1, min(PAGE_PARTS, len(ids) // PART_ROWS))
    size = -(-len(ids) // parts)
    queries = []
    for part in range(parts):
        cte, params = ids_cte(ids[part * size:(part + 1) * size])
        queries.append((f"{cte}{near_cte(f, params)}\n{load_sql('trials_page')}", params))
    rows = db.fetch_df_parts(queries, timeout_ms=60_000)
    if rows.empty:
        return rows
    position = pd.Index(ids).get_indexer(rows["nct_id"].astype(str))  # each row's place in the engine's order
    order = np.argsort(np.where(position < 0, len(ids), position), kind="stable")
    return rows.iloc[order].reset_index(drop=True)


def count_trials(f: Filters, *, db: Database | None = None, engine: Engine | None = None) -> int:
    """How many trials match a filter (the engine of the database)."""
    return (engine or engine_for(db or runtime.get_db())).count(f)


# ---- one trial's details ------------------------------------------------------------------------
_NCT_RE = re.compile(r"^\s*(NCT)\s*(\d{8})\s*$", re.IGNORECASE)
DETAIL_TIMEOUT_MS = 15_000
DETAIL_QUERIES = ("trial_study", "trial_conditions", "trial_arms", "trial_interventions", "trial_outcomes",
                  "trial_sites", "trial_sponsors", "trial_contacts")


def parse_nct_id(text: str | None) -> str:
    """A ClinicalTrials.gov id in canonical form ('nct05923281 ' → 'NCT05923281'); BadInput when malformed."""
    raw = text if isinstance(text, str) else ""
    match = _NCT_RE.match(raw)
    if not match:
        shown = raw.strip()[:30] or "(empty)"
        raise BadInput(f"“{shown}” is not a ClinicalTrials.gov id: it should be NCT followed by 8 digits, "
                       "like NCT05923281.")
    return f"NCT{int(match.group(2)):08d}"  # digits of any script (full-width, Arabic-Indic) as ASCII


def trial_detail(nct_id: str, near_lat: float | None = None, near_lon: float | None = None,
                 db: Database | None = None) -> TrialDetail | None:
    """One trial's details (None when the database has no such trial); distances from a point when given.

    Raises BadInput for a malformed id. The independent queries run concurrently.
    """
    nct = parse_nct_id(nct_id)
    db = db or runtime.get_db()
    results = db.fetch_many({name: (load_sql(name), {"nct_id": nct}) for name in DETAIL_QUERIES},
                            timeout_ms=DETAIL_TIMEOUT_MS)
    frames: dict[str, pd.DataFrame] = {}
    for name, value in results.items():
        if isinstance(value, TrialLandscapeError):
            raise value
        frames[name] = value
    study_df = frames["trial_study"]
    if study_df.empty:
        return None
    study = {k: (None if _missing(v) else v) for k, v in study_df.iloc[0].to_dict().items()}
    cond = frames["trial_conditions"]
    sponsors = frames["trial_sponsors"]
    lead = sponsors[sponsors["role"] == "lead"]
    sites = frames["trial_sites"].copy()
    if near_lat is not None and near_lon is not None and len(sites):
        sites["miles"] = [
            None if _missing(lat) or _missing(lon) else geo.haversine_miles(near_lat, near_lon, float(lat), float(lon))
            for lat, lon in zip(sites["lat"], sites["lon"], strict=True)
        ]
        sites = sites.sort_values("miles", na_position="last", kind="stable").reset_index(drop=True)
    else:
        sites["miles"] = None
    return TrialDetail(
        nct_id=nct, study=study,
        conditions=tuple(str(n) for n in cond.loc[cond["kind"] == "condition", "name"]) if len(cond) else (),
        keywords=tuple(str(n) for n in cond.loc[cond["kind"] == "keyword", "name"]) if len(cond) else (),
        arms=frames["trial_arms"], interventions=frames["trial_interventions"], outcomes=frames["trial_outcomes"],
        sites=sites,
        lead_sponsor=str(lead.iloc[0]["name"]) if len(lead) else None,
        lead_class=str(lead.iloc[0]["agency_class"]) if len(lead) and not _missing(lead.iloc[0]["agency_class"])
        else None,
        collaborators=tuple(str(n) for n in sponsors.loc[sponsors["role"] != "lead", "name"]) if len(sponsors) else (),
        criteria=parse_criteria(study.get("criteria")),
        provenance=provenance_lookup(db, nct),
        contacts=frames["trial_contacts"],
    )


def _missing(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False
