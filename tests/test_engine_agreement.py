"""Every surface counts the same trials for the benchmark's nine filters: the Trials page, Explore, Map, exports
and the assistant's search, on both engines (the sample database)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from devtools.bench import DASHBOARD_FILTERS, parse_query
from services.assistant.backend import DatabaseBackend
from services.dashboard import engine, search, sitemap, stats, trialview
from services.dashboard.filters import Filters
from services.data import geo

# The assistant's search has no parameters for the funder class or start years.
NOT_FOR_THE_ASSISTANT = {"industry-funded", "start 2015–2020"}


def _assistant_query(f: Filters) -> Filters:
    """What the assistant's search reads of a dashboard filter (the place found once, as the typed place)."""
    place = f.place()
    asked = Filters(condition=f.condition, status=f.status, phase=f.phase, country=f.country[:1], age=f.age,
                    sex=f.sex)
    if place is None:
        return asked
    return replace(asked, near=place.name, origin=place, radius=f.radius, unit=f.unit)


@pytest.fixture(scope="module", params=["memory", "sql"])
def chosen(request: Any, db: Any) -> Any:
    """The database's engine as the app chooses it: in-process, or SQL when the setting asks for it."""
    mp = pytest.MonkeyPatch()
    if request.param == "sql":
        mp.setenv(engine.ENGINE_SETTING, "sql")
    engine.forget()
    eng = engine.engine_for(db)
    assert eng.kind == request.param
    yield eng
    mp.undo()
    engine.forget()


@pytest.mark.parametrize(("name", "query"), DASHBOARD_FILTERS, ids=[n for n, _ in DASHBOARD_FILTERS])
def test_surfaces_agree_on_counts(db: Any, chosen: Any, name: str, query: str) -> None:
    f = parse_query(query)
    trials_count = search.count_trials(f, db=db)  # the Trials page's count
    assert trials_count > 0  # every benchmark filter selects something in the sample
    explore = stats.dashboard(f, db=db, timeout_ms=60_000)
    assert explore.errors == {} and explore.mode == chosen.kind
    assert explore.kpis["matching_trials"] == trials_count
    assert explore.funnel[-1]["count"] == trials_count
    exported = trialview.export_rows(f, "start_date", True)  # the Trials page's and Explore's downloads
    assert len(exported) == trials_count
    listed = search.matching_trials(f, sort="nct_id", descending=False, limit=search.EXPORT_CAP, db=db)
    ids = listed["nct_id"].tolist()
    assert ids == sorted(set(ids)) and len(ids) == trials_count
    with_sites = int(db.fetch_value("SELECT count(DISTINCT nct_id) FROM ctgov.facilities WHERE nct_id = ANY(:ids)",
                                    {"ids": ids}))
    on_map = sitemap.map_data(f, only_in_area=False, db=db)
    assert on_map.errors == {} and on_map.summary.trials == with_sites
    if name not in NOT_FOR_THE_ASSISTANT:
        found = DatabaseBackend(db).search_trials(_assistant_query(f), limit=5)
        # With a condition the assistant reads only the trials past the relevance gate, but it counts them all.
        assert found.get("matching") == trials_count and found["total"] <= trials_count


def test_country_names_agree_with_sql_over_the_base_tables(db: Any, chosen: Any) -> None:
    """The sidebar's country list (from the in-process store when it is loaded) is the base tables' list, in order."""
    rows = db.fetch_rows("SELECT co.name, count(DISTINCT co.nct_id) AS n FROM ctgov.countries co "
                         "WHERE co.removed IS NOT TRUE AND co.name IS NOT NULL GROUP BY co.name "
                         "ORDER BY n DESC, co.name COLLATE \"C\"")
    expected = [str(r["name"]) for r in rows]
    assert len(expected) > 50
    assert chosen.country_names() == expected
    # the sidebar shows one name per ISO code ("Korea, Republic of" and "South Korea" are one country)
    assert search.country_names(db) == list(dict.fromkeys(geo.country_display(n) for n in expected))
    assert len(search.country_names(db)) < len(expected)
