"""One engine per database, chosen once and named; the two engines give exactly the same numbers and pages."""

from __future__ import annotations

import logging

import pytest

from services.dashboard import engine, facetstore, search, stats
from services.dashboard.filters import Filters

QUERIES = [
    {},
    {"condition": "lung cancer"},
    {"condition": "NSCLC", "status": "ANY"},
    {"condition": "ALL", "status": "ANY"},
    {"near": "Boston, MA", "radius": "100", "status": "ANY"},
    {"near": "Osaka, Japan", "radius": "300", "unit": "km", "status": "ANY"},
    {"age": "62", "sex": "male"},
    {"age": "0.5", "sex": "female", "status": "ANY"},
    {"status": "RECRUITING", "phase": "PHASE2"},
    {"country": "Japan"},
    {"funder": "INDUSTRY"},
    {"start_from": "2015", "start_to": "2020", "status": "ANY"},
    {"state": "Texas", "healthy": "no", "results": "yes", "status": "ANY"},
    {"sponsor": "pfizer", "enroll_min": "100", "enroll_max": "1000", "status": "ANY"},
    {"intervention": "metformin", "type": "INTERVENTIONAL", "status": "ANY"},
    {"condition": "no such disease anywhere", "status": "ANY"},
    {"fda": "yes", "status": "ANY"},
    {"fda": "no", "phase": "PHASE3", "status": "ANY"},
    # Issue 38: the date ranges, age group, intervention type, facility name and include=… (records a filter
    # cannot judge let in).
    {"posted_from": "2018", "posted_to": "2020", "status": "ANY"},
    {"updated_from": "2024", "condition": "asthma"},
    {"completion_from": "2020", "completion_to": "2022", "include": "completion", "status": "ANY"},
    {"age_group": "child", "status": "ANY"},
    {"age_group": ["adult", "older_adult"], "condition": "diabetes"},
    {"intervention_type": "DEVICE", "status": "ANY"},
    {"facility": "mayo clinic", "status": "ANY"},
    {"condition": "alzheimer", "start_from": "2015", "include": "start", "status": "ANY"},
    {"enroll_min": "100", "include": "enrollment"},
    {"phase": "PHASE2", "include": "phase"},
    {"country": "Germany", "include": "sites"},
]


@pytest.fixture
def fresh_choice(db):
    engine.forget()
    yield
    engine.forget()


def test_engine_chosen_once_per_database_and_logged_once(db, fresh_choice, caplog):
    with caplog.at_level(logging.INFO, logger="services.dashboard.engine"):
        first = engine.engine_for(db)
        again = engine.engine_for(db)
    assert first is again and first.kind == "memory"  # the sample's import built the derived tables
    assert [r.getMessage() for r in caplog.records].count(f"engine for {db.label}: In-process engine") == 1
    # The page names how this start got its arrays once the store is loaded (another test in this process may
    # have loaded it already, so load it here rather than depend on the order).
    store = facetstore.store_for(db)
    how = "mapped from the start cache" if store.from_cache else "loaded from the database"
    this_start = f" This start: {store.n:,} studies {how} in {store.load_seconds:.1f} s."
    assert store.n > 0 and facetstore.loaded(db) is store
    assert stats.engine(db) == {"mode": "memory", "title": "In-process engine",
                                "text": engine.MEMORY_TEXT[1] + this_start}


def test_engine_sql_without_derived_tables(db, fresh_choice, monkeypatch):
    monkeypatch.setattr(engine, "derived_available", lambda _db: False)  # a read-only AACT without app tables
    chosen = engine.engine_for(db)
    assert isinstance(chosen, engine.SqlEngine) and chosen.describe()["title"].startswith("SQL engine")
    assert "python -m services import aact" in chosen.describe()["text"]


def test_engine_setting_asks_for_sql(db, fresh_choice, monkeypatch):
    monkeypatch.setenv(engine.ENGINE_SETTING, "sql")
    chosen = engine.engine_for(db)
    assert chosen.kind == "sql" and f"{engine.ENGINE_SETTING}=sql" in chosen.describe()["text"]
    assert stats.dashboard(Filters(), db=db).mode == "sql"


@pytest.mark.parametrize("query", QUERIES, ids=[str(q) for q in QUERIES])
def test_engines_agree_on_count_ids_and_pages(db, query):
    f, notices = Filters.from_query(query)
    assert notices == []
    memory, sql = engine.MemoryEngine(db), engine.SqlEngine(db)
    ids = sql.matching_ids(f)
    assert memory.matching_ids(f) == ids and ids == sorted(ids)
    assert memory.count(f) == sql.count(f) == len(ids)
    for sort in engine.SORTS:  # nearest_miles without a place: every distance NULL, so NCT id order
        for descending in (True, False):
            kw = {"sort": sort, "descending": descending, "limit": 7, "offset": 3}
            assert memory.trial_page(f, **kw) == sql.trial_page(f, **kw), (sort, descending)


def test_engines_sequential_baseline_same_numbers(db):
    f, _ = Filters.from_query({"condition": "diabetes"})
    a = stats.dashboard(f, db=db, engine=engine.SqlEngine(db), sequential=True, timeout_ms=60_000)
    b = stats.dashboard(f, db=db, engine=engine.MemoryEngine(db))
    assert a.errors == {} and a.as_dict() == b.as_dict()


@pytest.mark.parametrize("query", [{"country": "Germany"},
                                   {"near": "Boston, MA", "radius": "50", "status": "ANY"},
                                   {"age_group": "older_adult", "intervention_type": "DRUG",
                                    "state": "Texas"}])
def test_engines_same_dashboard_with_a_place_or_new_filter(db, query):
    """The whole dashboard (area KPIs, the place stage of the funnel, every facet) is the same from both
    engines."""
    f, _ = Filters.from_query(query)
    a = stats.dashboard(f, db=db, engine=engine.SqlEngine(db), timeout_ms=60_000)
    b = stats.dashboard(f, db=db, engine=engine.MemoryEngine(db))
    assert a.errors == {} and a.as_dict() == b.as_dict()
    last = a.funnel[-1]
    assert last["key"] == "place" and last["active"] and last["stage"].startswith("Place: ")


def test_trials_page_sorted_rows_follow_the_engine_order(db):
    f, _ = Filters.from_query({"condition": "diabetes", "status": "ANY"})
    for sort in ("sites", "title", "enrollment"):
        page = search.matching_trials(f, sort=sort, descending=True, limit=25, offset=10, db=db)
        want = engine.SqlEngine(db).trial_page(f, sort=sort, descending=True, limit=25, offset=10)
        assert page["nct_id"].tolist() == want and len(want) == 25


def test_distance_sort_whole_list_agrees(db):
    f, _ = Filters.from_query({"near": "Boston, MA", "radius": "300", "status": "ANY"})
    memory, sql = engine.MemoryEngine(db), engine.SqlEngine(db)
    for descending in (True, False):
        kw = {"sort": "nearest_miles", "descending": descending, "limit": 100_000, "offset": 0}
        listed = memory.trial_page(f, **kw)
        assert listed == sql.trial_page(f, **kw) and len(listed) == memory.count(f) > 20
    sites = search.matching_trials(f, sort="sites", descending=True, limit=50, db=db)["sites"].tolist()
    assert sites == sorted(sites, reverse=True)


@pytest.mark.parametrize("kw", [
    {}, {"status": ()}, {"condition": "diabetes", "status": (), "offset": 5, "limit": 30},
    {"status": (), "at": (42.3601, -71.0589), "radius": 300},
    {"status": ("RECRUITING", "COMPLETED"), "at": (35.68, 139.69), "radius": 12_500},
    {"condition": "lung cancer", "at": (40.71, -74.0), "radius": 50, "limit": 100},
])
def test_assistant_search_in_process_order_is_the_sql_order(db, monkeypatch, kw):
    from services.assistant.backend import DatabaseBackend
    from services.dashboard.filters import Filters
    from services.trials import DEFAULT_STATUSES

    engine.forget(db)
    assert engine.engine_for(db).kind == "memory"
    asked = {"status": DEFAULT_STATUSES, **kw}
    page = {k: asked.pop(k) for k in ("limit", "offset") if k in asked}
    at = asked.pop("at", None)
    query = Filters.at(*at, **asked) if at else Filters(**asked)
    in_process = DatabaseBackend(db).search_trials(query, **page)
    # SQL orders instead: the SQL engine's relevance order with a condition, else assistant_search_page.sql.
    monkeypatch.setattr(engine.MemoryEngine, "search_page",
                        lambda self, *a, **k: engine.SqlEngine(self.db).search_page(*a, **k))
    in_sql = DatabaseBackend(db).search_trials(query, **page)
    assert in_process == in_sql
    assert in_process["total"] > 0


def test_fda_filter_follows_the_registry_flags(db, raw_v2):
    """The example filter of the README's "how to add a filter": counted here from the shipped files themselves."""
    flags = [(s["protocolSection"].get("oversightModule") or {}) for s in raw_v2]
    given = [o for o in flags if o.get("isFdaRegulatedDrug") is not None or o.get("isFdaRegulatedDevice") is not None]
    yes = sum(1 for o in given if o.get("isFdaRegulatedDrug") or o.get("isFdaRegulatedDevice"))
    for answer, want in (("yes", yes), ("no", len(given) - yes)):
        f, notices = Filters.from_query({"fda": answer, "status": "ANY"})
        assert notices == [] and f.fda_regulated is (answer == "yes")
        assert engine.MemoryEngine(db).count(f) == engine.SqlEngine(db).count(f) == want > 0
        assert f.query_string() == f"status=ANY&fda={answer}"
    assert Filters(fda_regulated=False).describe()[-1] == "Not FDA-regulated"
    assert Filters.from_query({"fda": "maybe"})[1] == ["Ignored fda: use yes or no."]
