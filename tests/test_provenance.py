"""What our copy lacks: a CSV-derived study's page, guided card, report entry and export say its criteria, ages
and sex are missing from this copy (not absent from the registry); full records say nothing of the kind."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from services.assistant.backend import DatabaseBackend
from services.assistant.guided import GuidedAssistant, IntakeForm
from services.assistant.handlers import trial_card
from services.assistant.session import AssistantSession
from services.assistant.view_model import card_view
from services.dashboard import search, trialview
from services.dashboard.filters import Filters
from services.data import provenance

PROJECT = Path(__file__).resolve().parent.parent
NAMES = [provenance.FIELDS[f] for f in ("criteria", "ages", "sex")]  # "eligibility criteria text", "age limits", "sex"
REGISTRY_SILENCE = ("Any age", "Not stated", "gives no eligibility criteria text", "There is no age limit",
                    "People of any sex can join", "no minimum to no maximum")


@pytest.fixture(scope="module")
def csv_study(db: Any) -> dict[str, Any]:
    """A CSV-derived study whose source carried neither criteria nor ages nor sex (and got no criteria fill)."""
    row = db.fetch_rows(
        "SELECT ss.nct_id, s.brief_title, (SELECT min(c.name) FROM ctgov.conditions c WHERE c.nct_id = s.nct_id) AS cond "
        "FROM app.study_sources ss JOIN ctgov.studies s ON s.nct_id = ss.nct_id "
        "WHERE ss.lacks @> ARRAY['criteria', 'ages', 'sex'] AND ss.criteria_source IS NULL "
        "AND EXISTS (SELECT 1 FROM ctgov.conditions c WHERE c.nct_id = s.nct_id) ORDER BY ss.nct_id LIMIT 1")
    assert row, "the sample has no CSV-derived study without ages and sex"
    return row[0]


@pytest.fixture(scope="module")
def full_study(db: Any) -> str:
    return str(db.fetch_value("SELECT nct_id FROM app.study_sources WHERE source_kind = 'ctgov-json' "
                              "AND cardinality(lacks) = 0 ORDER BY nct_id LIMIT 1"))


def _plain(text: str) -> str:
    return text.replace("\\", "")


def test_provenance_describe_tells_copy_gaps_from_registry_silence() -> None:
    prov = provenance.Provenance("NCT00000001", lacks=frozenset({"ages"}))
    assert provenance.describe(None, "ages", prov, "Any age") == provenance.NOT_IN_COPY
    assert provenance.describe("", "sex", prov, "Not stated") == "Not stated"  # the source carried sex: none given
    assert provenance.describe("18 Years", "ages", prov, "Any age") == "18 Years"
    assert provenance.describe(None, "ages", provenance.Provenance("NCT00000001"), "Any age") == "Any age"
    assert provenance.copy_note(["sex", "criteria", "keywords"]) .startswith(
        "Not in this copy — see ClinicalTrials.gov: eligibility criteria text and sex (")


def test_provenance_trial_page_says_criteria_ages_and_sex_are_not_in_this_copy(csv_study: dict[str, Any]) -> None:
    at = AppTest.from_file(str(PROJECT / "app_pages/trials.py"), default_timeout=120)
    at.query_params["nct"] = csv_study["nct_id"]
    at.run()
    assert not at.exception, at.exception
    texts = _plain("\n".join([m.value for m in at.markdown] + [i.value for i in at.info] + [c.value for c in at.caption]))
    assert f"**Ages:** {provenance.NOT_IN_COPY} · **Sex:** {provenance.NOT_IN_COPY}" in texts
    assert f"Eligibility criteria text: {provenance.NOT_IN_COPY}" in texts
    note = next(i.value for i in at.info if i.value.startswith("Our copy of this study lacks"))
    assert all(name in note for name in NAMES) and "does not mean the registry lacks them" in note
    assert not [s for s in REGISTRY_SILENCE if s in texts]


def test_provenance_trial_page_of_a_full_record_has_no_copy_note(full_study: str) -> None:
    at = AppTest.from_file(str(PROJECT / "app_pages/trials.py"), default_timeout=120)
    at.query_params["nct"] = full_study
    at.run()
    assert not at.exception, at.exception
    texts = "\n".join([m.value for m in at.markdown] + [i.value for i in at.info])
    assert "not in this copy" not in _plain(texts) and "Our copy of this study lacks" not in texts


def test_provenance_guided_card_and_report_say_what_the_copy_lacks(db: Any, csv_study: dict[str, Any]) -> None:
    nct = csv_study["nct_id"]
    guide = GuidedAssistant(DatabaseBackend(db))
    session = AssistantSession()
    guide.submit_intake(session, IntakeForm(diagnosis=csv_study["cond"], age=50, sex="female",
                                            location="Boston, MA", travel_radius_miles=None))
    session.candidates = {nct: {"nct_id": nct, "title": csv_study["brief_title"] or "", "conditions": [csv_study["cond"]],
                                "status": "RECRUITING", "phases": [], "strategies": ["exact"]}}
    guide.run_matching(session)
    card = card_view(trial_card(session, nct) or {})
    assert card["summary"].startswith(f"Not in this copy — see ClinicalTrials.gov: {NAMES[0]}, ")
    assert all(name in card["summary"].split("(")[0] for name in NAMES)
    checked = {c["criterion"]: c["status"] for c in (session.matched(nct) or {})["criteria"]}
    assert checked[f"Age limits: {provenance.NOT_IN_COPY}"] == "not_enough_information"
    assert checked[f"Sex limits: {provenance.NOT_IN_COPY}"] == "not_enough_information"
    assert "Any age" not in checked and "Sex: any" not in checked

    guide.select(session, [nct])
    guide.make_report(session)
    html = session.report_html or ""
    assert "Not in this copy — see ClinicalTrials.gov: eligibility criteria text" in html
    entry = html[html.index(f'id="trial-{nct}"'):]
    note = entry[entry.index("Not in this copy"):].split("</p>")[0]
    assert all(name in note for name in NAMES)


def test_provenance_export_names_fields_missing_from_this_copy(db: Any, csv_study: dict[str, Any]) -> None:
    detail = search.trial_detail(csv_study["nct_id"])
    assert detail is not None and detail.conditions
    rows = trialview.export_rows(Filters(condition=detail.conditions[0], status=(str(detail.study["status"]),)),
                                 "nct_id", False)
    frame = pd.read_csv(io.BytesIO(trialview_export_csv(rows)))
    row = frame[frame["nct_id"] == csv_study["nct_id"]].iloc[0]
    cell = str(row["not_in_this_copy"])
    assert cell.endswith("— see ClinicalTrials.gov") and all(name in cell.split("; ") or name in cell for name in NAMES)
    full = frame[frame["not_in_this_copy"].isna()]
    ids = list(full["nct_id"])
    if ids:  # every record the export calls complete is complete in app.study_sources
        provs = provenance.fetch(db, ids)
        assert not any(p.partial for p in provs.values())


def trialview_export_csv(rows: pd.DataFrame) -> bytes:
    from services.dashboard import export

    return export.to_csv_bytes(rows)


def test_provenance_tools_report_missing_fields(db: Any, csv_study: dict[str, Any]) -> None:
    backend = DatabaseBackend(db)
    info = backend.get_eligibility_criteria(csv_study["nct_id"]) or {}
    details = backend.get_trial_details(csv_study["nct_id"]) or {}
    for record in (info, details):
        assert {"criteria", "ages", "sex"} <= set(record.get("not_in_this_copy") or ())
        assert str(record.get("copy_note", "")).startswith("Not in this copy")


def test_provenance_csv_age_groups_are_not_taken_for_exact_limits(db: Any) -> None:
    # A site CSV carries only ClinicalTrials.gov's age groups (child 0-17, adult 18-64, older adult 65+); the loader
    # stores a group's edges (an adult-only trial: 18 to 64 years), but the trial's own limits may be narrower. A
    # 30-year-old used to be told the age limit was met; now it is "not enough information", and the tools say the
    # limits are age groups only. Outside the groups' edges the answer is still a sure "no".
    row = db.fetch_rows(
        "SELECT ss.nct_id, s.brief_title, e.minimum_age, e.maximum_age, "
        "(SELECT min(c.name) FROM ctgov.conditions c WHERE c.nct_id = s.nct_id) AS cond "
        "FROM app.study_sources ss JOIN ctgov.studies s ON s.nct_id = ss.nct_id "
        "JOIN ctgov.eligibilities e ON e.nct_id = ss.nct_id "
        "WHERE ss.source_kind = 'ctgov-csv' AND e.minimum_age = '18 Years' AND e.maximum_age = '64 Years' "
        "AND EXISTS (SELECT 1 FROM ctgov.conditions c WHERE c.nct_id = s.nct_id) ORDER BY ss.nct_id LIMIT 1")
    assert row, "the sample has no CSV-derived adult-only study"
    study = row[0]
    nct = study["nct_id"]
    assert "ages" in provenance.lookup(db, nct).lacks
    assert trialview.ages_text(study, provenance.lookup(db, nct)) == (
        "18 Years to 64 Years (the edges of its age groups; the exact limits are not in this copy)")
    backend = DatabaseBackend(db)
    info = backend.get_eligibility_criteria(nct) or {}
    assert "ages" in (info.get("not_in_this_copy") or ())
    guide = GuidedAssistant(DatabaseBackend(db))
    verdicts = {}
    for age in (30, 70):
        session = AssistantSession()
        guide.submit_intake(session, IntakeForm(diagnosis=study["cond"], age=age, sex="female",
                                                location="Boston, MA", travel_radius_miles=None))
        session.candidates = {nct: {"nct_id": nct, "title": study["brief_title"] or "", "conditions": [study["cond"]],
                                    "status": "RECRUITING", "phases": [], "strategies": ["exact"]}}
        guide.run_matching(session)
        ages = [c for c in (session.matched(nct) or {})["criteria"] if c["criterion"].startswith("Age")]
        verdicts[age] = [(c["criterion"], c["status"]) for c in ages]
    assert verdicts[30] == [("Age 18 years to 64 years", "not_enough_information")]
    assert verdicts[70][0][1] == "not_met"
