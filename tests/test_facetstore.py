"""The in-process engine gives exactly the numbers (and map) of the SQL engine's base-table queries."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from services.dashboard import engine, facetstore, sitemap, stats
from services.dashboard.filters import Filters
from tests.test_stats_modes import QUERIES


@pytest.fixture(scope="module")
def store(db):
    facetstore.forget()
    return facetstore.store_for(db)


@pytest.mark.parametrize("query", QUERIES, ids=[str(q) for q in QUERIES])
def test_facetstore_dashboard_equals_direct(db, store, query):
    f, notices = Filters.from_query(query)
    assert notices == []
    direct = stats.dashboard(f, engine=engine.SqlEngine(db), timeout_ms=60_000)
    memory = stats.dashboard(f, engine=engine.MemoryEngine(db))
    assert direct.errors == {} and memory.errors == {}
    assert memory.mode == "memory"
    assert memory.as_dict() == direct.as_dict()


def test_facetstore_is_the_engine_after_import(db, store):
    engine.forget(db)
    assert engine.engine_for(db).kind == "memory"


def test_facetstore_loads_once_per_refresh(db, store):
    assert facetstore.store_for(db) is store
    assert store.n == db.fetch_value("SELECT count(*) FROM app.study_facets")
    assert len(store.site_row) == db.fetch_value(
        "SELECT count(*) FROM ctgov.facilities f JOIN ctgov.studies s ON s.nct_id = f.nct_id")


def test_sites_read_in_slices_equal_sites_read_at_once(db, store, monkeypatch):
    monkeypatch.setattr(facetstore, "SITE_SLICE_ROWS", 3_000)  # the sample's ~42,000 sites in 15 slices
    sliced = facetstore.FacetStore(db, store.refreshed_at)
    assert len(sliced.site_row) == len(store.site_row) > 30_000
    for name in ("site_row", "site_id", "site_loc", "loc_lat", "loc_lon"):
        assert np.array_equal(getattr(sliced, name), getattr(store, name), equal_nan=True), name
    assert np.all(np.diff(sliced.site_id.astype(np.int64)) > 0)  # site-id order, as the map's ties need
    for name in ("site_country", "site_state", "site_city", "site_status"):
        a, b = getattr(sliced, name), getattr(store, name)
        assert list(a.labels) == list(b.labels) and np.array_equal(a.codes, b.codes), name
        assert list(a.labels[:-1]) == sorted(a.labels[:-1], key=lambda v: v.encode()) and a.labels[-1] is None


def test_site_positions_reproduce_every_site_coordinate(db, store):
    df = db.fetch_df("SELECT f.id, f.latitude::float8 AS lat, f.longitude::float8 AS lon FROM ctgov.facilities f "
                     "JOIN ctgov.studies s ON s.nct_id = f.nct_id ORDER BY f.id")
    assert np.array_equal(store.site_id, df["id"].to_numpy())
    assert np.array_equal(store.loc_lat[store.site_loc], df["lat"].to_numpy(float), equal_nan=True)
    assert np.array_equal(store.loc_lon[store.site_loc], df["lon"].to_numpy(float), equal_nan=True)
    assert store.nloc < len(df) / 2  # sites share positions (cities), which is what makes the map cheap


def _map_dict(m):
    return {"summary": m.summary, "points": m.points.to_dict("records"), "nearest": m.nearest.to_dict("records"),
            "countries": m.countries.to_dict("records"), "states": m.states.to_dict("records"), "errors": m.errors}


MAP_CASES = [(q, True, sitemap.POINT_LIMIT) for q in QUERIES] + [
    ({"status": "ANY"}, True, 50),
    ({"near": "Boston, MA", "radius": "300", "status": "ANY"}, True, 20),
    ({"near": "Boston, MA", "radius": "100"}, False, 40),
    ({"country": "Japan", "status": "ANY"}, False, 10),
    ({"state": "Texas", "status": "ANY"}, True, 5),
]


@pytest.mark.parametrize("case", MAP_CASES, ids=[str(c) for c in MAP_CASES])
def test_facetstore_map_equals_direct(db, store, case):
    query, only_in_area, limit = case
    f, notices = Filters.from_query(query)
    assert notices == []
    direct = sitemap.map_data(f, only_in_area=only_in_area, point_limit=limit, engine=engine.SqlEngine(db))
    memory = sitemap.map_data(f, only_in_area=only_in_area, point_limit=limit, engine=engine.MemoryEngine(db))
    assert _map_dict(memory) == _map_dict(direct)


def test_map_grid_step_first_tried_on_a_part_of_the_positions_still_equals_direct(db, store, monkeypatch):
    # At registry scale a step is first tried on every k-th position in use: more cells there means more in all.
    monkeypatch.setattr(facetstore, "CELL_SAMPLE_SIZE", 25)
    passed_over = []
    distinct_cells = facetstore._distinct_cells
    for query, only_in_area, limit in MAP_CASES[-5:]:
        monkeypatch.setattr(facetstore, "_distinct_cells", lambda *a, limit=limit: passed_over.append(
            distinct_cells(*a) > limit) or distinct_cells(*a))
        f, _ = Filters.from_query(query)
        direct = sitemap.map_data(f, only_in_area=only_in_area, point_limit=limit, engine=engine.SqlEngine(db))
        memory = sitemap.map_data(f, only_in_area=only_in_area, point_limit=limit, engine=engine.MemoryEngine(db))
        assert memory.summary.cell_degrees is not None
        assert _map_dict(memory) == _map_dict(direct)
    assert any(passed_over)  # steps were passed over on a part of the positions alone



def test_sql_engine_map_and_sites_of_a_wide_radius_finish_and_agree(db, store):
    # The area's box was tested on latitude::float8, for which PostgreSQL has no statistics: it guessed one facility
    # in the box and joined each facility in it to every matching trial one by one. A 3,000-mile radius took 33 s
    # on the sample (past the map's own 30 s limit: no map) and the Sites page 59 s; now about 1 s and 5 s.
    f = Filters(near="Boston, MA", radius=3000, status=())
    direct = sitemap.map_data(f, engine=engine.SqlEngine(db), timeout_ms=15_000)
    assert _map_dict(direct) == _map_dict(sitemap.map_data(f, engine=engine.MemoryEngine(db)))
    assert direct.summary.sites > 10_000

@pytest.mark.parametrize("labels", [3, 40, 150])
def test_group_mode_counted_in_a_table_equals_the_sorted_count(monkeypatch, labels):
    rng = np.random.default_rng(labels)
    coded = facetstore.Coded(rng.integers(0, labels + 1, 20_000).astype(np.int32),  # the last code is NULL
                             np.array([f"v{i:05d}" for i in range(labels)] + [None], dtype=object))
    sites = rng.permutation(20_000)[:15_000]
    groups = rng.integers(0, 300, sites.size).astype(np.int32)
    groups[:50] = 299  # a group whose every label is NULL has no mode
    coded.codes[sites[:50]] = labels
    groups[50:][groups[50:] == 299] = 0
    table = facetstore._group_mode(groups, coded, sites, 300)
    monkeypatch.setattr(facetstore, "DENSE_COUNTS_MAX", 0)
    assert table == facetstore._group_mode(groups, coded, sites, 300)
    assert table[299] is None and all(v is not None for v in table[:299])


@pytest.mark.parametrize("order", ["studies together, ascending", "studies together, any order", "scattered"])
def test_distinct_studies_per_group_equal_a_count_of_pairs(order):
    rng = np.random.default_rng(7)
    rows = np.sort(rng.integers(0, 3_000, 20_000)).astype(np.int32)  # a few sites per study
    if order == "studies together, any order":
        rows = rng.permutation(3_000).astype(np.int32)[rows]
    elif order == "scattered":
        rows = rng.permutation(rows)
    groups = rng.integers(0, 40, rows.size).astype(np.int32)
    groups[:30] = 0  # a study with many sites in one group counts once there
    rows[:30] = rows[0]
    want = np.zeros(41, dtype=np.int64)
    for g, _ in set(zip(groups.tolist(), rows.tolist(), strict=True)):
        want[g] += 1
    got = facetstore._distinct_per_group(groups, rows, 41)
    assert got.tolist() == want.tolist() and got[40] == 0
    assert facetstore._distinct_per_group(groups[:0], rows[:0], 41).tolist() == [0] * 41


@pytest.mark.parametrize("fine", [False, True], ids=["micro-degrees (AACT)", "finer than micro-degrees"])
def test_locations_group_equal_positions_and_keep_every_coordinate_exact(fine):
    rng = np.random.default_rng(3)
    lat = np.round(rng.uniform(-90, 90, 500), 6)
    lon = np.round(rng.uniform(-180, 180, 500), 6)
    if fine:
        lat[::7] += 1e-9  # not a numeric(10,6) value: grouped by exact pairs instead
    pick = rng.integers(0, 500, 5_000)
    site_lat, site_lon = lat[pick], lon[pick]
    site_lat[::11] = np.nan  # no coordinates
    site_lon[::13] = np.nan
    site_loc, loc_lat, loc_lon = facetstore._locations(site_lat, site_lon)
    located = ~np.isnan(site_lat) & ~np.isnan(site_lon)
    assert np.array_equal(loc_lat[site_loc[located]], site_lat[located])
    assert np.array_equal(loc_lon[site_loc[located]], site_lon[located])
    assert np.all(site_loc[~located] == len(loc_lat) - 1) and np.isnan(loc_lat[-1])
    distinct = {(a, b) for a, b in zip(site_lat[located], site_lon[located], strict=True)}
    assert len(loc_lat) - 1 == len(distinct)


def test_warm_up_loads_the_store_that_pages_then_use(db, store):
    facetstore.forget()
    assert not facetstore.is_loaded(db)
    facetstore.warm_up(db)
    assert facetstore.is_loaded(db)
    assert facetstore.store_for(db).n == store.n


def test_warm_up_failure_is_logged_not_raised(caplog):
    from services.data.db import Database

    gone = Database("postgresql://nobody@127.0.0.1:1/nothing", label="gone")
    with caplog.at_level("WARNING", logger="services.dashboard.facetstore"):
        facetstore.warm_up(gone)
    assert not facetstore.is_loaded(gone) and "warm-up failed" in caplog.text


def test_map_of_every_trial_is_computed_once_per_store_and_handed_out_as_copies(db, store, monkeypatch):
    computed = []
    compute = facetstore._map_frames
    monkeypatch.setattr(facetstore, "_map_frames", lambda *a, **k: computed.append(a[1]) or compute(*a, **k))
    monkeypatch.setattr(store, "_world", {})
    args = {"only_in_area": True, "point_limit": 30, "nearest_limit": 10, "grid_steps": sitemap.GRID_STEPS}
    every, _ = Filters.from_query({"status": "ANY"})
    first = facetstore.map_frames(store, every, db, **args)
    first.points.loc[0, "sites"] = -1  # a caller changing its copy changes nobody else's
    again = facetstore.map_frames(store, every, db, **args)
    assert computed == [every] and again.points["sites"].min() > 0
    assert again.summary == compute(store, every, db, **args).summary
    default = facetstore.map_frames(store, Filters(), db, **args)
    assert facetstore.map_frames(store, Filters(), db, **args).summary == default.summary
    japan, _ = Filters.from_query({"country": "Japan", "status": "ANY"})
    facetstore.map_frames(store, japan, db, **args)
    facetstore.map_frames(store, japan, db, **args)
    assert computed == [every, Filters(), japan, japan]  # a filtered map is counted afresh (stored cells)


def test_grid_cells_stored_once_equal_cells_computed_per_request(store):
    assert sorted(store.loc_grid) == sorted(repr(step) for step in sitemap.GRID_STEPS)
    for step in sitemap.GRID_STEPS:
        cells, bound = store.loc_cells(step)
        keys, fresh_bound = facetstore._cell_keys(store.loc_lat[:-1], store.loc_lon[:-1], step)
        assert bound == fresh_bound and np.array_equal(cells[:-1], keys) and cells[-1] == bound
    other, other_bound = store.loc_cells(0.3)  # a step the map does not use is computed on request
    assert other_bound == facetstore._cell_keys(store.loc_lat[:-1], store.loc_lon[:-1], 0.3)[1] and other.size


@pytest.mark.parametrize("query", [{"status": "ANY"}, {"status": "RECRUITING"}, {"condition": "lung cancer"}],
                         ids=str)
def test_export_table_rows_equal_the_per_trial_query(db, store, monkeypatch, query):
    from services.dashboard import export, search

    f, _ = Filters.from_query(query)
    direct = search.matching_trials(f, limit=search.EXPORT_CAP, db=db, engine=engine.SqlEngine(db))
    monkeypatch.setattr(search, "EXPORT_TABLE_ROWS", 1)
    assert store.export is not None and store.export.num_rows == store.n
    calls = []
    rows_of = facetstore.export_rows
    monkeypatch.setattr(facetstore, "export_rows", lambda *a: calls.append(len(a[1])) or rows_of(*a))
    memory = search.matching_trials(f, limit=search.EXPORT_CAP, db=db, engine=engine.MemoryEngine(db))
    assert calls == [len(direct)] and len(direct) > 0
    pd.testing.assert_frame_equal(memory, direct)
    for fmt in export.FORMATS:
        assert export.to_bytes(memory, fmt) == export.to_bytes(direct, fmt)
