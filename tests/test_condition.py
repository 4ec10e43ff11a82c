"""The one condition model: spelling variants, the shipped vocabulary, every search path agreeing, and the
guided NSCLC search finding every open NSCLC trial that admits the patient."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from services.assistant import AssistantSession
from services.assistant.backend import DatabaseBackend
from services.assistant.guided import GuidedAssistant, IntakeForm
from services.assistant.handlers import condition_matches
from services.dashboard import condition, engine, stats
from services.dashboard.filters import Filters, condition_terms_sql, filter_clauses


# ---- the model on its own ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "expected"), [
    ("Alzheimer's", ("alzheimer",)),
    ("ALZHEIMERS", ("alzheimer",)),
    ("Non-small-cell lung cancers", ("non", "small", "cell", "lung", "cancer")),
    ("Crohn’s disease", ("crohn", "disease")),
    ("MS", ("ms",)),  # short words keep their s: abbreviations stay as written
    ("AIDS", ("aids",)),
    ("allergies", ("allergy",)),
    ("abscesses", ("abscess",)),
    ("sclerosis", ("sclerosis",)),
])
def test_condition_words_fold_case_possessive_plural_and_hyphen(text: str, expected: tuple[str, ...]) -> None:
    assert condition.words(text) == expected


@pytest.mark.parametrize("group", [("breast cancer", "breast neoplasms", "mammary cancer", "Breast Tumours"),
                                   ("heart attack", "myocardial infarction"),
                                   ("T2D", "type 2 diabetes", "NIDDM", "type II diabetes")])
def test_condition_spellings_resolve_to_one_heading(group: tuple[str, ...]) -> None:
    concepts = {t: condition.expand(t) for t in group}
    assert len({c.named for c in concepts.values()}) == 1, {t: c.named for t, c in concepts.items()}
    assert all(c.named for c in concepts.values())


def test_condition_broader_heading_includes_narrower_ones_through_the_tree() -> None:
    lung, nsclc = condition.expand("lung cancer"), condition.expand("non-small cell lung cancer")
    assert nsclc.named and nsclc.descriptors <= lung.descriptors
    assert condition.expand("NSCLC").named == nsclc.named  # the project's abbreviation row
    # MeSH 2024 files Adenocarcinoma of Lung under Lung Neoplasms and Adenocarcinoma; data/mesh/extra_parents.csv
    # adds the WHO classification's link under NSCLC, so lung cancer ⊇ NSCLC ⊇ lung adenocarcinoma.
    luad = condition.expand("lung adenocarcinoma")
    assert luad.descriptors <= nsclc.descriptors <= lung.descriptors and luad.descriptors != nsclc.descriptors


def test_condition_caption_names_the_headings_and_counts_the_narrower_ones() -> None:
    breast = condition.expand("breast cancer")
    more = len(breast.descriptors) - 1
    assert breast.caption() == f"breast cancer → Breast Neoplasms and {more} narrower headings" and more > 0
    assert condition.expand("xyzzy quux").caption() == (
        "xyzzy quux → no MeSH heading; condition names with these words")
    assert condition.expand("  ").caption() is None


def test_condition_unresolved_text_keeps_the_plain_word_match() -> None:
    concept = condition.expand("xyzzy quux")
    assert not concept.named and concept.words == ("xyzzy", "quux")
    assert concept.matches_name("Quux of the Xyzzy") and not concept.matches_name("Quux")
    assert not concept.matches_heading("Quux")


def test_condition_trial_match_uses_names_and_headings() -> None:
    breast = condition.expand("breast cancer")
    assert breast.matches_trial(["Metastatic Breast Cancer"], [])
    assert breast.matches_trial(["Carcinoma"], ["Triple Negative Breast Neoplasms"])  # narrower heading
    assert not breast.matches_trial(["Prostate Cancer"], ["Prostatic Neoplasms"])


def test_condition_old_excerpt_is_gone() -> None:
    root = Path(__file__).resolve().parents[1]
    assert not (root / "data" / "conditions").exists()
    source = (root / "services" / "dashboard" / "condition.py").read_text(encoding="utf-8")
    assert "WORD_GROUPS" not in source and "EXTENT_WORDS" not in source


# ---- the database: every path agrees ---------------------------------------------------------------------
def _count(db: Any, text: str, mode: str) -> int:
    f = Filters(condition=text)
    board = stats.dashboard(f, engine=engine.by_name(db, mode), facets=["phase"], timeout_ms=120_000)
    assert board.errors == {}
    return int(board.kpis["matching_trials"])


@pytest.mark.parametrize("mode", ["memory", "sql"])
def test_condition_explore_counts_follow_the_tree(db: Any, mode: str) -> None:
    texts = ("breast cancer", "breast neoplasms", "mammary cancer", "lung cancer", "non-small cell lung cancer",
             "NSCLC", "heart attack", "myocardial infarction", "T2D", "type 2 diabetes", "NIDDM", "Alzheimer",
             "Alzheimer's", "alzheimers")
    counts = {t: _count(db, t, mode) for t in texts}
    assert counts["breast cancer"] == counts["breast neoplasms"] == counts["mammary cancer"] > 0
    assert counts["lung cancer"] >= counts["non-small cell lung cancer"] == counts["NSCLC"] > 0
    assert counts["heart attack"] == counts["myocardial infarction"] > 0
    assert counts["T2D"] == counts["type 2 diabetes"] == counts["NIDDM"] > 0
    assert counts["Alzheimer"] == counts["Alzheimer's"] == counts["alzheimers"] > 0


def test_condition_lung_adenocarcinoma_lies_under_lung_cancer_not_under_nsclc(db: Any) -> None:
    """MeSH 2024 files Adenocarcinoma of Lung under Lung Neoplasms (and Adenocarcinoma), not under NSCLC: its
    count is bounded by lung cancer's, and by NSCLC's only when the sample happens to say so."""
    luad, lung = _count(db, "lung adenocarcinoma", "memory"), _count(db, "lung cancer", "memory")
    assert 0 < luad <= lung


def test_condition_sql_paths_select_the_same_studies(db: Any) -> None:
    for text in ("lung cancer", "MS", "diabetes", "lung adenocarcinoma", "type 2 diabetes", "xyzzy quux"):
        f = Filters(condition=text, status=())
        p1: dict[str, Any] = {}
        direct = {r["nct_id"] for r in db.fetch_rows(
            f"SELECT s.nct_id FROM ctgov.studies s WHERE {filter_clauses(f, p1)['condition']}", p1)}
        p2: dict[str, Any] = {}
        terms = {r["nct_id"] for r in db.fetch_rows(
            f"SELECT q.nct_id FROM ({condition_terms_sql(text, p2)}) q", p2)}  # the in-process engine's lookup
        assert direct == terms and (direct or text == "xyzzy quux"), text


def test_condition_base_tables_find_the_stored_studies_with_headings(db: Any) -> None:
    """Without app.study_mesh (a read-only AACT) the base tables find every study the stored match finds through
    a browse_conditions heading or a condition name written as an entry term."""
    concept = condition.expand("breast cancer")
    p1: dict[str, Any] = {}
    stored = {r["nct_id"] for r in db.fetch_rows(condition.ids_sql(concept, p1, stored=True) or "", p1)}
    p2: dict[str, Any] = {}
    base = {r["nct_id"] for r in db.fetch_rows(condition.ids_sql(concept, p2, stored=False) or "", p2)}
    assert base and base <= stored
    assert len(base) >= 0.8 * len(stored), (len(base), len(stored))


# ---- the assistant ----------------------------------------------------------------------------------------
# Studies carrying NSCLC or a narrower MeSH heading (app.study_mesh: their MeSH terms and resolved condition names).
OPEN_NSCLC_FOR_MAN_OF_62 = """
WITH named AS (SELECT nct_id FROM app.study_mesh WHERE descriptor_ui = ANY(CAST(:uis AS text[])))
SELECT s.nct_id FROM ctgov.studies s JOIN named USING (nct_id)
LEFT JOIN ctgov.eligibilities e ON e.nct_id = s.nct_id
WHERE upper(replace(s.overall_status, ' ', '_')) IN ('RECRUITING', 'NOT_YET_RECRUITING')
  AND COALESCE(upper(e.gender), 'ALL') NOT IN ('FEMALE')
  AND COALESCE(substring(e.minimum_age FROM '^\\s*([0-9]+)\\s*[Yy]ear')::int, 0) <= 62
  AND COALESCE(substring(e.maximum_age FROM '^\\s*([0-9]+)\\s*[Yy]ear')::int, 200) >= 62
"""


def test_condition_guided_nsclc_lompoc_finds_every_open_nsclc_trial(db: Any) -> None:
    """NSCLC, 62, male, Lompoc CA, 200 miles: the search strategies find every open NSCLC trial of the sample
    that admits a 62-year-old man (counted here from app.study_mesh: NSCLC and every narrower MeSH heading)."""
    uis = sorted(condition.expand("NSCLC").descriptors)
    expected = {r["nct_id"] for r in db.fetch_rows(OPEN_NSCLC_FOR_MAN_OF_62, {"uis": uis})}
    assert len(expected) > 15  # more than one page: the search has to page through them
    guide = GuidedAssistant(DatabaseBackend(db))
    session = AssistantSession()
    guide.submit_intake(session, IntakeForm(diagnosis="non-small cell lung cancer", age=62, sex="male",
                                            location="Lompoc, CA", travel_radius_miles=200.0))
    step = guide.run_search(session)
    found = set(session.candidates)
    assert expected - found == set()
    # Everything found by a search for the diagnosis itself is about NSCLC; the broader search may add other
    # lung cancers, which never lead: matching looks at the diagnosis's own trials first.
    for nct, trial in session.candidates.items():
        if set(trial["strategies"]) - {"broader"}:
            assert nct in expected or _about_nsclc(db, nct), nct
    assert "at any distance" in step.text
    guide.run_matching(session)
    assert session.matched_trials
    lead = session.matched_trials[0]
    assert lead["verdict"] != "not_relevant" and _about_nsclc(db, lead["nct_id"])


def _about_nsclc(db: Any, nct_id: str) -> bool:
    terms = [r["t"] for r in db.fetch_rows(
        "SELECT name AS t FROM ctgov.conditions WHERE nct_id = :n UNION ALL SELECT name FROM ctgov.keywords "
        "WHERE nct_id = :n UNION ALL SELECT mesh_term FROM ctgov.browse_conditions WHERE nct_id = :n", {"n": nct_id})]
    return condition_matches("NSCLC", {"conditions": terms})


def test_condition_search_tool_pages_hold_only_matching_trials(db: Any) -> None:
    from services.assistant.registry import ToolContext
    from services.assistant.tools import build_registry

    session = AssistantSession()
    ctx = ToolContext(session, DatabaseBackend(db))
    registry = build_registry()
    seen: list[str] = []
    for page in (1, 2):
        out = registry.run("search_trials", {"strategy": "exact", "condition": "NSCLC", "page": page, "limit": 10},
                           ctx)
        assert out.is_error is False
        import json

        result = json.loads(out.content)
        assert result["returned"] == 10 and result["more_pages"] is True  # full pages: checked before the limit
        seen += [t["nct_id"] for t in result["trials"]]
    assert len(set(seen)) == 20
    assert all(_about_nsclc(db, n) for n in seen)


def test_condition_sidebar_says_which_headings_the_condition_resolved_to(db: Any) -> None:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app_pages" / "explore.py"),
                           default_timeout=120)
    at.query_params["condition"] = "lung cancer"
    at.run()
    assert not at.exception, at.exception
    texts = [t.value for t in at.sidebar.text]
    line = next(t for t in texts if t.startswith("lung cancer → "))
    more = len(condition.expand("lung cancer").descriptors) - 1
    assert line == f"lung cancer → Lung Neoplasms and {more} narrower headings"
