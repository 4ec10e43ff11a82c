"""The one condition model: spelling variants, the shipped vocabulary, every search path agreeing, and the
guided NSCLC search finding every open NSCLC trial that admits the patient."""

from __future__ import annotations

import csv
from collections import defaultdict
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


def _keys(text: str) -> frozenset[tuple[frozenset[str], bool]]:
    return frozenset((a.key, a.whole) for a in condition.expand(text).alternatives)


def test_condition_spellings_expand_identically() -> None:
    spellings = ["Alzheimer", "Alzheimer's", "alzheimers", "ALZHEIMER’S"]
    assert len({_keys(s) for s in spellings}) == 1
    # "Alzheimer's disease" names the MeSH heading, whose entry term "Alzheimer" makes it no narrower.
    assert _keys("Alzheimer's disease") == _keys("Alzheimer")


def test_condition_broader_term_includes_narrower_names() -> None:
    lung = condition.expand("lung cancer")
    for narrower in ("NSCLC", "SCLC", "Lung Adenocarcinoma", "Carcinoma, Non-Small-Cell Lung",
                     "Small Cell Lung Carcinoma", "Stage IV Non-small Cell Lung Cancer AJCC v8", "Bronchogenic carcinoma"):
        assert lung.matches(narrower.lower()), narrower
    assert not lung.matches("breast cancer")
    nsclc = condition.expand("non-small cell lung cancer")
    assert nsclc.matches("nsclc") and nsclc.matches("advanced nsclc") and nsclc.matches("lung adenocarcinoma")
    assert not nsclc.matches("small cell lung carcinoma (sclc)")
    assert _keys("NSCLC") == _keys("non-small cell lung cancer")
    assert "Carcinoma, Non-Small-Cell Lung" in lung.headings and "Lung Neoplasms" in lung.named
    shown, more = lung.terms_shown()
    assert "Non-Small Cell Lung Cancer (NSCLC)" in shown and "Small Cell Lung Cancer (SCLC)" in shown and more >= 0
    assert "lung cancer" not in [s.lower() for s in shown]  # what was typed is not repeated


def test_condition_narrower_term_takes_the_broader_disease_as_a_whole() -> None:
    luad = condition.expand("lung adenocarcinoma")
    assert luad.broader == ("Carcinoma, Non-Small-Cell Lung",)
    for name in ("NSCLC", "Non-small Cell Lung Cancer (NSCLC)", "Carcinoma, Non-Small-Cell Lung",
                 "Locally Advanced or Metastatic Non-Small Cell Lung Cancer", "Stage IV Non-small Cell Lung Cancer AJCC v8",
                 "Recurrent NSCLC", "Lung Adenocarcinoma"):
        assert luad.matches(name.lower()), name
    for name in ("Squamous NSCLC", "EGFR-mutant NSCLC", "NSCLC with brain metastases", "lung cancer",
                 "small cell lung cancer", "NSCLC IV"):  # a stage number counts only beside "stage"
        assert not luad.matches(name.lower()), name
    # In a MeSH term or keyword the broader disease says nothing about which kind a trial is for.
    assert not luad.matches("nsclc", condition_name=False)
    assert luad.matches("lung adenocarcinoma", condition_name=False)
    assert luad.matches_trial(["NSCLC"], []) and not luad.matches_trial([], ["NSCLC", "carcinoma, non-small-cell lung"])
    t2 = condition.expand("type 2 diabetes")
    assert t2.matches("diabetes mellitus") and t2.matches("diabetes") and not t2.matches("diabetes mellitus i")
    assert not t2.matches("type 1 diabetes") and not t2.matches("gestational diabetes")
    shown, _ = luad.terms_shown()
    assert "Non-Small Cell Lung Cancer (NSCLC) in general" in shown
    # Never a MeSH grouping heading, and nothing above a heading at the top of the excerpt.
    assert condition.expand("breast cancer").broader == () and condition.expand("hypertension").broader == ()
    # The typed words beside the heading stay required in the broader names too.
    assert condition.expand("stage IV lung adenocarcinoma").matches("stage iv nsclc")
    assert not condition.expand("stage IV lung adenocarcinoma").matches("nsclc")


def test_condition_ambiguous_abbreviations_count_only_as_whole_names() -> None:
    ms = condition.expand("multiple sclerosis")
    assert ms.matches("ms") and ms.matches("MS (relapsing)") is False and ms.matches("relapsing ms") is False
    assert ms.matches("relapsing multiple sclerosis") and ms.matches("rrms")
    typed = condition.expand("ALL")
    assert typed.matches("all") and typed.matches("acute lymphoblastic leukemia")
    assert not typed.matches("all solid tumors")
    # Typed together with other words, the abbreviation is just a word again.
    assert condition.expand("B-cell ALL").matches("relapsed b-cell all")


def test_condition_vocabulary_is_consistent_and_sourced() -> None:
    vocab = condition.vocabulary()
    with open(condition.DATA_DIR / "synonyms.csv", encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and all(r["means"] in vocab.concepts and r["match"] in ("word", "whole") for r in rows)
    for c in vocab.concepts.values():
        assert all(p in vocab.concepts for p in c.parents)
        assert c.heading not in vocab.ancestors(c.heading)  # no cycles
    readme = (condition.DATA_DIR / "README.md").read_text(encoding="utf-8")
    assert "Source:" in readme and "meshb.nlm.nih.gov" in readme


# ---- against the database -------------------------------------------------------------------------------
def test_condition_mesh_excerpt_agrees_with_registry_ancestors(db: Any) -> None:
    """Every ancestor the excerpt gives a heading is among the registry's own MeSH ancestors of studies indexed
    with that heading (ClinicalTrials.gov computes them from the full tree), where the registry has that term."""
    rows = db.fetch_rows("SELECT nct_id, mesh_term, mesh_type FROM ctgov.browse_conditions")
    listed: dict[str, set[str]] = defaultdict(set)
    every: dict[str, set[str]] = defaultdict(set)
    known = {r["mesh_term"] for r in rows}
    for r in rows:
        every[r["nct_id"]].add(r["mesh_term"])
        if r["mesh_type"] == "mesh-list":
            listed[r["nct_id"]].add(r["mesh_term"])
    vocab = condition.vocabulary()
    checked = 0
    claimed: set[tuple[str, str]] = set()
    seen: set[tuple[str, str]] = set()
    for nct, headings in listed.items():
        for h in headings & vocab.concepts.keys():
            checked += 1
            claimed |= {(h, a) for a in vocab.ancestors(h) & known}
            seen |= {(h, a) for a in every[nct]}
    assert checked >= 50  # the sample indexes enough studies with excerpt headings for this to say something
    # Records come from different years of the MeSH tree, so one study may lack an ancestor that another year's
    # tree has; the excerpt is wrong only where no study indexed with the heading carries the ancestor at all.
    assert claimed - seen == set()


QUERIES = ["lung cancer", "non-small cell lung cancer", "NSCLC", "Alzheimer", "Alzheimer's", "alzheimers",
           "Alzheimer's disease", "multiple sclerosis", "ALL", "T2DM", "cancer", "COVID-19", "breast cancers",
           "lung adenocarcinoma", "type 2 diabetes", "stage IV lung adenocarcinoma", "relapsing multiple sclerosis"]


@pytest.mark.parametrize("text", QUERIES)
def test_condition_python_and_sql_select_the_same_terms(db: Any, text: str) -> None:
    """The assistant's Python check and the SQL of both dashboard paths agree on every term of the dictionary."""
    expansion = condition.expand(text)
    params: dict[str, Any] = {}
    where = condition.match_sql("t.words", expansion, params, "q")
    in_sql = {r["term"] for r in db.fetch_rows(f"SELECT t.term FROM app.terms t WHERE {where}", params)}
    params = {}
    split = condition.match_sql("z.w", expansion, params, "q")
    split_sql = {r["term"] for r in db.fetch_rows(
        f"SELECT t.term FROM app.terms t CROSS JOIN LATERAL (SELECT {condition.words_sql('t.term')} AS w) z "
        f"WHERE {split}", params)}
    in_python = {r["term"] for r in db.fetch_rows("SELECT term FROM app.terms") if expansion.matches(r["term"])}
    assert in_sql == split_sql == in_python
    assert in_sql  # every query here names something the sample has


def _count(db: Any, text: str, mode: str) -> int:
    f = Filters(condition=text)
    board = stats.dashboard(f, engine=engine.by_name(db, mode), facets=["phase"], timeout_ms=120_000)
    assert board.errors == {}
    return int(board.kpis["matching_trials"])


@pytest.mark.parametrize("mode", ["memory", "sql"])
def test_condition_explore_counts_nest_and_spellings_agree(db: Any, mode: str) -> None:
    counts = {t: _count(db, t, mode) for t in ("lung cancer", "non-small cell lung cancer", "NSCLC", "Alzheimer",
                                               "Alzheimer's", "alzheimers")}
    assert counts["lung cancer"] >= counts["non-small cell lung cancer"] > 0
    assert counts["lung cancer"] >= counts["NSCLC"] > 0
    assert counts["Alzheimer"] == counts["Alzheimer's"] == counts["alzheimers"] > 0


def test_condition_sql_paths_select_the_same_studies(db: Any) -> None:
    for text in ("lung cancer", "MS", "diabetes", "lung adenocarcinoma", "type 2 diabetes"):
        f = Filters(condition=text, status=())
        p1: dict[str, Any] = {}
        direct = {r["nct_id"] for r in db.fetch_rows(
            f"SELECT s.nct_id FROM ctgov.studies s WHERE {filter_clauses(f, p1)['condition']}", p1)}
        p2: dict[str, Any] = {}
        terms = {r["nct_id"] for r in db.fetch_rows(
            f"SELECT q.nct_id FROM ({condition_terms_sql(text, p2)}) q", p2)}  # the in-process engine's lookup
        assert direct == terms and direct, text


# ---- the assistant ----------------------------------------------------------------------------------------
OPEN_NSCLC_FOR_MAN_OF_62 = """
WITH named AS (
    SELECT nct_id FROM ctgov.conditions
     WHERE downcase_name ~ '\\m(nsclc|non[- ]?small[- ]cell lung (cancer|carcinoma)|carcinoma, non-small-cell lung)'
        OR downcase_name ~ '\\m(lung non[- ]small cell (cancer|carcinoma)|lung cancer, non-small cell)'
        OR downcase_name ~ '\\m(lung adenocarcinoma|adenocarcinoma of (the )?lung)'
    UNION SELECT nct_id FROM ctgov.keywords
     WHERE downcase_name ~ '\\m(nsclc|non[- ]?small[- ]cell lung (cancer|carcinoma))'
    UNION SELECT nct_id FROM ctgov.browse_conditions
     WHERE mesh_term IN ('Carcinoma, Non-Small-Cell Lung', 'Adenocarcinoma of Lung')
)
SELECT s.nct_id FROM ctgov.studies s JOIN named USING (nct_id)
LEFT JOIN ctgov.eligibilities e ON e.nct_id = s.nct_id
WHERE upper(replace(s.overall_status, ' ', '_')) IN ('RECRUITING', 'NOT_YET_RECRUITING')
  AND COALESCE(upper(e.gender), 'ALL') NOT IN ('FEMALE')
  AND COALESCE(substring(e.minimum_age FROM '^\\s*([0-9]+)\\s*[Yy]ear')::int, 0) <= 62
  AND COALESCE(substring(e.maximum_age FROM '^\\s*([0-9]+)\\s*[Yy]ear')::int, 200) >= 62
"""


def test_condition_guided_nsclc_lompoc_finds_every_open_nsclc_trial(db: Any) -> None:
    """NSCLC, 62, male, Lompoc CA, 200 miles: the search strategies find every open NSCLC trial of the sample
    that admits a 62-year-old man (counted here with plain SQL over conditions, keywords and MeSH terms)."""
    expected = {r["nct_id"] for r in db.fetch_rows(OPEN_NSCLC_FOR_MAN_OF_62)}
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


def test_condition_sidebar_says_what_the_condition_expanded_to(db: Any) -> None:
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "pages" / "1_Explore.py"),
                           default_timeout=120)
    at.query_params["condition"] = "lung cancer"
    at.run()
    assert not at.exception, at.exception
    texts = [t.value for t in at.sidebar.text]
    line = next(t for t in texts if t.startswith("Also searches: "))
    assert "Non-Small Cell Lung Cancer (NSCLC)" in line and "Small Cell Lung Cancer (SCLC)" in line
