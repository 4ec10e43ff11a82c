"""The relevance order (services/dashboard/relevance.py): both engines, both document sources, the judged set's
precision@10, synonymous spellings, the assistant's gate and the Trials page's default sort."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from services.assistant.backend import DatabaseBackend
from services.dashboard import engine, relevance, search
from services.dashboard.filters import Filters

PROJECT = Path(__file__).resolve().parent.parent
JUDGED = json.loads((PROJECT / "tests/data/relevance_judgements.json").read_text(encoding="utf-8"))
# Reached on the shipped sample with the MeSH model (2026-11-27, condensed lists): 0.98 overall with relevance, 0.82
# with the old default order. The floors sit a little under what the relevance order reaches; a change that ranks
# worse fails here.
OVERALL_FLOOR = 0.95
QUERY_FLOOR = 0.8


def _rows(db, f: Filters, **kw):
    select, params = engine.base_select(f)
    return relevance.ranked(db, str(f.condition), engine.as_cte(select), params, limit=100_000, **kw)


def _precision(ids: list[str], judged: dict[str, bool]) -> float:
    """Precision@10 of the condensed list (Sakai 2007, "Alternatives to Bpref"): the ranking with the unjudged
    trials left out. The judged set was pooled from the old word-matching model's results, so the MeSH model's top
    ten is mostly unjudged trials (e.g. NCT04075396, 'Carcinoma, Non-Small-Cell Lung', for NSCLC): counting them as
    not relevant would measure the pool, not the order."""
    top = [i for i in ids if i in judged][:10]
    return sum(judged[i] for i in top) / len(top) if top else 0.0


@pytest.mark.parametrize("query", [{"condition": "lung cancer"}, {"condition": "leukemia", "status": "ANY"},
                                   {"condition": "diabetes", "phase": "PHASE3", "status": "ANY"},
                                   {"condition": "hypertension", "near": "Boston, MA", "radius": "300",
                                    "status": "ANY"}])
def test_relevance_engines_give_the_same_whole_order(db, query):
    f, notices = Filters.from_query(query)
    assert notices == []
    memory, sql = engine.MemoryEngine(db), engine.SqlEngine(db)
    for descending in (True, False):
        kw = {"sort": "relevance", "descending": descending, "limit": 100_000, "offset": 0}
        ids = sql.trial_page(f, **kw)
        assert memory.trial_page(f, **kw) == ids
        assert sorted(ids) == sql.matching_ids(f)  # every matching trial is ranked, none added
    page = sql.trial_page(f, sort="relevance", descending=True, limit=10, offset=5)
    assert page == memory.trial_page(f, sort="relevance", descending=True, limit=100_000, offset=0)[5:15]


def test_relevance_without_a_condition_is_the_start_date_order(db):
    f = Filters(status=(), phase=("PHASE2",))
    for eng in (engine.MemoryEngine(db), engine.SqlEngine(db)):
        assert (eng.trial_page(f, sort="relevance", descending=True, limit=30, offset=0)
                == eng.trial_page(f, sort="start_date", descending=True, limit=30, offset=0))


@pytest.mark.parametrize("text", ["NSCLC", "hypertension", "alzheimer's disease", "ALL"])
def test_stored_and_on_the_fly_documents_rank_alike(db, text):
    f = Filters(condition=text, status=())
    stored = _rows(db, f, stored=True)
    assert stored and stored == _rows(db, f, stored=False)


def test_stale_stored_documents_are_not_read(db):
    """A term dictionary rebuilt without the search documents (whose term ids it renumbers) makes the order read
    the documents on the fly; rebuilding them as an import does makes the stored ones current again."""
    from services.data.db import load_sql
    from services.data.loaders import REFRESH_SEARCH

    f = Filters(condition="NSCLC", status=())
    expected = _rows(db, f, stored=False)
    assert relevance.stored_documents(db)
    try:
        db.execute_script(load_sql("refresh_study_facets"))
        assert not relevance.stored_documents(db)
        assert _rows(db, f) == expected
    finally:
        db.execute_script(REFRESH_SEARCH)
    assert relevance.stored_documents(db) and _rows(db, f) == expected


def test_the_fused_score_orders_and_the_text_rank_is_optional(db):
    rows = _rows(db, Filters(condition="hypertension", status=()))
    fused = [r["fused"] for r in rows]
    assert fused == sorted(fused, reverse=True)
    assert all(r["concept_score"] is not None for r in rows)  # every candidate has a concept score
    assert any(r["text_rank"] is None for r in rows) and any(r["text_rank"] is not None for r in rows)


def test_nsclc_spellings_return_the_same_trials(db):
    """'Same' means: NSCLC and its written-out name resolve to one MeSH heading, ask the same text query and give
    the identical ranking (not only the same top 10), on the Trials page and in the assistant's search. Lung
    adenocarcinoma is below Lung Neoplasms in MeSH 2024 (not below NSCLC): its trials are all lung cancer trials."""
    assert relevance.tsquery("NSCLC") == relevance.tsquery("non-small cell lung cancer")
    nsclc = _rows(db, Filters(condition="NSCLC", status=()))
    spelled = _rows(db, Filters(condition="non-small cell lung cancer", status=()))
    assert len(nsclc) > 100 and [r["nct_id"] for r in nsclc] == [r["nct_id"] for r in spelled]
    luad = {r["nct_id"] for r in _rows(db, Filters(condition="lung adenocarcinoma", status=()))}
    lung = {r["nct_id"] for r in _rows(db, Filters(condition="lung cancer", status=()))}
    assert luad and luad <= lung and {r["nct_id"] for r in nsclc} <= lung
    backend = DatabaseBackend(db)
    found = {text: [t["nct_id"] for t in backend.search_trials(Filters(condition=text, status=()), limit=10)[
        "trials"]] for text in ("NSCLC", "non-small cell lung cancer")}
    assert found["NSCLC"] == found["non-small cell lung cancer"] and found["NSCLC"]


def test_a_narrower_condition_never_takes_the_broader_disease(db):
    """The excerpt's rule that a trial for the broader disease "as a whole" takes a narrower search is gone: a
    lung adenocarcinoma search finds the trials carrying that heading (by MeSH term or by a name resolving to it),
    and an NSCLC trial naming no adenocarcinoma is not among them."""
    luad = set(engine.SqlEngine(db).matching_ids(Filters(condition="lung adenocarcinoma", status=())))
    carrying = {r["nct_id"] for r in db.fetch_rows(
        "SELECT nct_id FROM ctgov.browse_conditions WHERE mesh_term = 'Adenocarcinoma of Lung'")}
    assert carrying and carrying <= luad
    whole = {r["nct_id"] for r in db.fetch_rows(
        "SELECT nct_id FROM ctgov.conditions WHERE downcase_name IN ('nsclc', 'non-small cell lung cancer') EXCEPT "
        "SELECT nct_id FROM ctgov.conditions WHERE downcase_name ~ 'adenocarcinoma' EXCEPT "
        "SELECT nct_id FROM ctgov.browse_conditions WHERE mesh_term = 'Adenocarcinoma of Lung'")}
    assert whole and not whole & luad


def test_precision_at_10_on_the_judged_set(db, capsys):
    sql = engine.SqlEngine(db)
    new_p, old_p = {}, {}
    for item in JUDGED["queries"]:
        judged = {j["nct_id"]: j["relevant"] for j in item["judgements"]}
        f = Filters(condition=item["query"], status=())
        new_p[item["query"]] = _precision(sql.trial_page(f, sort="relevance", descending=True, limit=100_000,
                                                         offset=0), judged)
        old_p[item["query"]] = _precision(sql.trial_page(f, sort="start_date", descending=True, limit=100_000,
                                                         offset=0), judged)
    new_all, old_all = sum(new_p.values()) / len(new_p), sum(old_p.values()) / len(old_p)
    with capsys.disabled():
        print("\nprecision@10 (relevance | old default order, start date newest first)")
        for q in new_p:
            print(f"  {q:<28}{new_p[q]:>6.2f}{old_p[q]:>8.2f}")
        print(f"  {'overall':<28}{new_all:>6.2f}{old_all:>8.2f}")
    assert new_all >= OVERALL_FLOOR and all(p >= QUERY_FLOOR for p in new_p.values()), new_p
    assert new_all > old_all


def test_the_judged_set_is_well_formed():
    for item in JUDGED["queries"]:
        ids = [j["nct_id"] for j in item["judgements"]]
        assert len(ids) == len(set(ids)) and all(j["reason"].strip() for j in item["judgements"])
        assert any(j["relevant"] for j in item["judgements"]) and any(not j["relevant"] for j in item["judgements"])


def test_assistant_search_uses_the_relevance_order_past_the_gate(db):
    f = Filters(condition="leukemia", status=())
    rows = _rows(db, f)
    gate = 2.0 / (relevance.RRF_K + len(rows))
    passing = [r["nct_id"] for r in rows if r["fused"] >= gate]
    assert 0 < len(passing) < len(rows)  # the gate leaves weak trials out (here: no text hit, low concept rank)
    assert all(r["text_rank"] is None for r in rows if r["fused"] < gate)
    page = DatabaseBackend(db).search_trials(Filters(condition="leukemia", status=()), limit=20)
    assert page["total"] == len(passing) and page.get("matching") == len(rows)  # every page counts them all
    assert [t["nct_id"] for t in page["trials"]] == passing[:20]
    for eng in (engine.MemoryEngine(db), engine.SqlEngine(db)):
        assert eng.search_page(f, None, None, limit=20, offset=20) == (passing[20:40], len(passing), len(rows))


def test_assistant_search_past_the_last_page_still_counts_the_matches(db):
    # The assistant's page 9 of a search with fewer pages: no trials on it, but as many match as on page 1 (it said
    # "0 matching", so the model could tell the patient that nothing matched).
    f = Filters(condition="leukemia", status=())
    rows = _rows(db, f)
    passing = [r["nct_id"] for r in rows if r["fused"] >= 2.0 / (relevance.RRF_K + len(rows))]
    for eng in (engine.MemoryEngine(db), engine.SqlEngine(db)):
        for origin in (None, (42.3601, -71.0589)):
            assert eng.search_page(f, origin, None, limit=20, offset=len(rows) + 20) == ([], len(passing), len(rows))


def test_assistant_search_with_a_place_keeps_the_gated_trials_nearest_first(db):
    f = Filters(condition="leukemia", status=())
    rows = _rows(db, f)
    passing = {r["nct_id"] for r in rows if r["fused"] >= 2.0 / (relevance.RRF_K + len(rows))}
    query = Filters.at(42.3601, -71.0589, condition="leukemia", status=(), radius=12_500)  # any distance
    page = DatabaseBackend(db).search_trials(query, limit=50)
    assert page["total"] == len(passing) and len(page["trials"]) == 50 and page.get("matching") == len(rows)
    assert {t["nct_id"] for t in page["trials"]} <= passing
    miles = [t["nearest_site"]["distance_miles"] for t in page["trials"] if t.get("nearest_site")]
    assert miles == sorted(miles)
    for eng in (engine.MemoryEngine(db), engine.SqlEngine(db)):
        assert eng.search_page(f, (42.3601, -71.0589), None, limit=30, offset=10) == (
            [t["nct_id"] for t in page["trials"]][10:40], len(passing), len(rows))


def test_assistant_search_with_a_place_counts_every_trial_past_the_gate(db, monkeypatch):
    # Nearest first, the page is drawn from the first PAGE_CAP trials of the relevance order; the in-process engine
    # gave that cap as the number past the gate (at 575,000 studies a common condition has more), SQL the true count.
    f = Filters(condition="leukemia", status=())
    rows = _rows(db, f)
    passing = [r["nct_id"] for r in rows if r["fused"] >= 2.0 / (relevance.RRF_K + len(rows))]
    monkeypatch.setattr(engine, "PAGE_CAP", 40)
    assert len(passing) > engine.PAGE_CAP
    memory, sql = engine.MemoryEngine(db), engine.SqlEngine(db)
    page = sql.search_page(f, (42.3601, -71.0589), None, limit=20, offset=5)
    assert page[1:] == (len(passing), len(rows)) and len(page[0]) == 20
    assert memory.search_page(f, (42.3601, -71.0589), None, limit=20, offset=5) == page


def test_assistant_search_without_a_condition_keeps_its_order(db):
    f = Filters(status=("RECRUITING",), phase=("PHASE3",))
    assert engine.SqlEngine(db).search_page(f, None, None, limit=10, offset=0) is None


# ---- the Trials page --------------------------------------------------------------------------------
def _page(**params: str) -> AppTest:
    at = AppTest.from_file(str(PROJECT / "app_pages/trials.py"), default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def test_trials_page_sorts_by_relevance_when_a_condition_is_given(db):
    at = _page(condition="NSCLC", status="ANY")
    assert at.selectbox(key="trials_sort").value == "relevance" and at.toggle(key="trials_desc").value is True
    want = search.matching_trials(Filters(condition="NSCLC", status=()), sort="relevance", descending=True,
                                  limit=50, db=db)
    assert list(at.dataframe[0].value["nct_id"]) == list(want["nct_id"])
    assert any("most relevant first" in c.value for c in at.caption)
    assert "sort" not in at.query_params  # the default stays out of the link


def test_trials_page_without_a_condition_keeps_the_start_date_default(db):
    at = _page(status="ANY")
    assert at.selectbox(key="trials_sort").value == "start_date"
    assert "Relevance" not in at.selectbox(key="trials_sort").options
    assert "Relevance" in _page(condition="NSCLC", status="ANY").selectbox(key="trials_sort").options


def test_trials_page_keeps_a_chosen_sort_with_a_condition(db):
    at = _page(condition="NSCLC", status="ANY", sort="start_date")
    assert at.selectbox(key="trials_sort").value == "start_date"
    at.selectbox(key="trials_sort").set_value("title").run()
    assert at.query_params["sort"] == "title"
    at.selectbox(key="trials_sort").set_value("relevance").run()
    assert "sort" not in at.query_params
