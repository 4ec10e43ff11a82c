"""The in-process engine's start cache: written after a load, memory-mapped by the next process, replaced after an
import, ignored when corrupt, and giving exactly the numbers of a load by COPY."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from services.dashboard import facetcopy, facetstore, stats
from services.dashboard.filters import Filters
from services.data import studymesh
from services.data.db import Database
from tests import scratch_server
from tests.conftest import PROJECT, TEST_DATA_DIR
from tests.test_stats_modes import QUERIES

pytestmark = pytest.mark.server  # a module-wide server of its own

TOPS = {name: int(spec["top"]) for name, spec in stats.FACETS.items() if "top" in spec}


def _loaded_store(db: Database) -> facetstore.FacetStore | None:
    """This process's store of the current generation when it holds one; never loads (None until then)."""
    return facetstore._current(db, facetstore.generation(db))


@pytest.fixture(scope="module")
def scratch() -> Iterator[tuple[Database, Path]]:
    """A server of its own (the first sample studies) that these tests import into; its cache root."""
    data_dir = TEST_DATA_DIR / f"facet-cache-{uuid.uuid4().hex[:8]}"
    url = scratch_server.prepare(data_dir, studies=300)
    db = Database(url, label="facet cache test")
    studymesh.ensure_built(db)  # as a server's start does: both engines' MeSH facets read app.study_mesh
    try:
        yield db, facetstore.cache_root(db)
    finally:
        facetstore.forget()
        db.close()
        scratch_server.release(data_dir)


@pytest.fixture(autouse=True)
def _build_at_full_priority(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server's child build runs below its visitors (BUILD_NICE 10). On a test machine whose two cores are
    busy with other workers, such a child got a few per cent of a core, and a 300-study build outlasted a
    120 s wait (CI of stop 44); these tests are about what is built, so the child runs at normal priority."""
    monkeypatch.setattr(facetstore, "BUILD_NICE", 0)


def _fresh(db: Database) -> facetstore.FacetStore:
    facetstore.forget()
    return facetstore.store_for(db)


def _generations(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


def _loaded_by_copy(db: Database, root: Path) -> tuple[facetstore.FacetStore, str]:
    """No cache folder: the store is loaded by COPY (and writes its cache); the store and its cache key."""
    for old in _generations(root):
        facetstore.shutil.rmtree(root / old)
    loaded = _fresh(db)
    assert loaded.from_cache is False
    return loaded, facetstore.cache_key(loaded.refreshed_at)


def _store_in_a_new_process(db: Database) -> dict[str, object]:
    """Load the store in a fresh Python process that counts its COPY statements: from_cache, copies, n, seconds."""
    code = ("import json, sys; from services.dashboard import facetstore; from services.data.db import Database\n"
            "copies = []; orig = Database.copy_csv\n"
            "def counted(self, *a, **k):\n    copies.append(1); return orig(self, *a, **k)\n"
            "Database.copy_csv = counted\n"
            "s = facetstore.store_for(Database(sys.argv[1]))\n"
            "print(json.dumps({'from_cache': s.from_cache, 'copies': len(copies), 'n': s.n,"
            " 'seconds': s.load_seconds}))\n")
    out = subprocess.run([sys.executable, "-c", code, db.url], cwd=PROJECT, capture_output=True, text=True,
                         timeout=300, env=dict(os.environ), check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _copies(db: Database) -> list[str]:
    """The keys of the start-cache copies the database holds."""
    return [str(r["key"]) for r in db.fetch_rows("SELECT DISTINCT key FROM app.facet_copy ORDER BY key")]


def _drop_copy(db: Database) -> None:
    """No copy in the database either: what a database written before the copies existed looks like."""
    db.execute("DELETE FROM app.facet_copy")


def test_cache_root_is_next_to_the_embedded_servers_data(scratch):
    db, root = scratch
    pgdata = Path(str(db.fetch_value("SHOW data_directory")))
    assert root.parent == pgdata.parent / "facet-cache"


def test_cache_written_after_a_load_and_mapped_by_the_next(scratch):
    db, root = scratch
    loaded, key = _loaded_by_copy(db, root)
    assert _generations(root) == [key]
    manifest = json.loads((root / key / "manifest.json").read_text())
    assert manifest["n"] == loaded.n == db.fetch_value("SELECT count(*) FROM app.study_facets") and manifest["refreshed_at"] == loaded.refreshed_at

    mapped = _fresh(db)
    assert mapped.from_cache is True and mapped is not loaded
    assert isinstance(mapped.nct, np.ndarray) and not mapped.nct.flags.writeable  # pages of the file, not a copy
    for name, value in vars(loaded).items():
        if name in facetstore._TRANSIENT:
            continue
        assert _same(getattr(mapped, name), value), name


def _same(a: object, b: object) -> bool:
    if isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b) if b.dtype.kind != "f" \
            else isinstance(a, np.ndarray) and np.array_equal(a, b, equal_nan=True)
    if isinstance(b, (facetstore.Coded, facetstore.Labeled)):
        return type(a) is type(b) and all(_same(getattr(a, k), v) for k, v in vars(b).items())
    if isinstance(b, dict):
        return isinstance(a, dict) and a.keys() == b.keys() and all(_same(a[k], v) for k, v in b.items())
    if isinstance(b, tuple):
        return isinstance(a, tuple) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@pytest.fixture(scope="module")
def loaded_and_mapped(scratch, tmp_path_factory):
    """One store loaded by COPY and the same store mapped back from a cache of its own (a folder no other test
    touches), shared by the comparisons below: loading and mapping are the slow part, comparing is not."""
    db, _ = scratch
    copied = facetstore.FacetStore(db, facetstore.generation(db) or "")
    root = tmp_path_factory.mktemp("mapped-cache")
    facetstore.write_cache(copied, root)
    mapped = facetstore.read_cache(root, copied.refreshed_at)
    assert mapped is not None and mapped.from_cache
    return db, copied, mapped


@pytest.mark.parametrize("query", QUERIES, ids=[str(q) for q in QUERIES])
def test_cached_store_gives_the_numbers_of_a_copy_load(loaded_and_mapped, query):
    db, copied, mapped = loaded_and_mapped
    f, _ = Filters.from_query(query)
    kpis_a, funnel_a, raw_a = copied.dashboard_frames(f, db, TOPS)
    kpis_b, funnel_b, raw_b = mapped.dashboard_frames(f, db, TOPS)
    assert (kpis_a, funnel_a) == (kpis_b, funnel_b) and raw_a.keys() == raw_b.keys()
    for name in raw_a:
        pd.testing.assert_frame_equal(raw_a[name], raw_b[name], obj=name)
    args = {"only_in_area": True, "point_limit": 50, "nearest_limit": 10, "grid_steps": (1.0, 5.0)}
    map_a = facetstore.map_frames(copied, f, db, **args)
    map_b = facetstore.map_frames(mapped, f, db, **args)
    assert (map_a.summary, map_a.cell) == (map_b.summary, map_b.cell)
    for part in ("points", "nearest", "countries", "states"):
        a, b = getattr(map_a, part), getattr(map_b, part)
        assert (a is None) == (b is None), part
        if a is not None:
            pd.testing.assert_frame_equal(a, b, obj=part)


def test_next_process_maps_the_cache_instead_of_copying(scratch):
    db, root = scratch
    stamp = _fresh(db).refreshed_at
    assert (root / facetstore.cache_key(stamp) / "manifest.json").is_file()
    child = _store_in_a_new_process(db)  # none of its COPY statements run when the cache is there
    assert child["from_cache"] is True and child["copies"] == 0 and child["n"] == db.fetch_value("SELECT count(*) FROM app.study_facets")


def test_an_import_replaces_the_cached_generation(scratch, tmp_path):
    db, root = scratch
    before = _fresh(db)
    old_key = facetstore.cache_key(before.refreshed_at)
    assert _generations(root) == [old_key]
    record = next(line for line in scratch_server.gzip.open(dict(scratch_server.SAMPLE_FILES)["ctgov-json"], "rt")
                  if line.strip())
    path = tmp_path / "one.jsonl"
    path.write_text(record)
    from services.data.loaders import import_ctgov_json

    import_ctgov_json(db, path)
    facetstore._checked.clear()  # don't wait REFRESH_CHECK_S for the store to notice
    after = facetstore.store_for(db)
    assert after.refreshed_at != before.refreshed_at and after.from_cache is False
    assert _generations(root) == [facetstore.cache_key(after.refreshed_at)]  # the old generation is gone
    assert _copies(db) == [facetstore.cache_key(after.refreshed_at)]  # from the database's copy too
    assert _fresh(db).from_cache is True


def test_the_import_command_writes_the_new_generations_cache(scratch, tmp_path):
    """`python -m services import …` leaves the next server start a cache to map (no SQL-served start after it)."""
    db, root = scratch
    record = next(line for line in scratch_server.gzip.open(dict(scratch_server.SAMPLE_FILES)["ctgov-json"], "rt")
                  if line.strip())
    path = tmp_path / "one.jsonl"
    path.write_text(record)
    out = subprocess.run([sys.executable, "-m", "services", "import", "ctgov-json", str(path), "--json"], cwd=PROJECT,
                         capture_output=True, text=True, timeout=300, env=dict(os.environ, DATABASE_URL=db.url),
                         check=True)
    report = json.loads(out.stdout)
    assert report["studies"] == 1 and report["start_cache_s"] is not None
    stamp = str(db.fetch_value("SELECT value FROM app.meta WHERE key = 'facets_refreshed_at'"))
    assert _generations(root) == [facetstore.cache_key(stamp)]  # the new generation, written by the command
    assert (root / facetstore.cache_key(stamp) / "manifest.json").is_file()
    # and what a first visitor sees of it (the default dashboard, the countries), for a start before the cache maps
    assert db.fetch_value("SELECT count(*) FROM app.landing WHERE stamp = :stamp", {"stamp": stamp}) == 2
    facetstore._checked.clear()
    assert _fresh(db).from_cache is True


@pytest.mark.parametrize("damage", ["truncated array", "garbage manifest", "other generation", "missing file"])
def test_a_corrupt_cache_is_ignored_and_rebuilt(scratch, damage, caplog):
    db, root = scratch
    stamp = _fresh(db).refreshed_at
    _drop_copy(db)
    folder = root / facetstore.cache_key(stamp)
    manifest = json.loads((folder / "manifest.json").read_text())
    if damage == "truncated array":
        target = folder / "nct.npy"
        target.write_bytes(target.read_bytes()[:-7])
    elif damage == "garbage manifest":
        (folder / "manifest.json").write_text('{"format": 1, "attrs": {')
    elif damage == "other generation":
        manifest["refreshed_at"] = "1999-01-01"
        (folder / "manifest.json").write_text(json.dumps(manifest))
    else:
        (folder / "site_row.npy").unlink()
    rebuilt = _fresh(db)
    assert rebuilt.from_cache is False and rebuilt.n == db.fetch_value("SELECT count(*) FROM app.study_facets")
    assert "ignoring the facet start cache" in caplog.text
    assert _fresh(db).from_cache is True  # written again by the load


def test_a_half_written_cache_is_never_read(scratch):
    db, root = scratch
    stamp = _fresh(db).refreshed_at
    key = facetstore.cache_key(stamp)
    facetstore.shutil.rmtree(root / key)
    _drop_copy(db)
    (root / f".tmp-{key}-crashed").mkdir()  # what a writer killed mid-way leaves: never under the final name
    (root / f".tmp-{key}-crashed" / "nct.npy").write_bytes(b"\x93NUMPY")
    assert facetstore.read_cache(root, stamp) is None
    assert _fresh(db).from_cache is False and (root / key / "manifest.json").is_file()


def test_cache_off_loads_by_copy(scratch, monkeypatch):
    db, _ = scratch
    monkeypatch.setenv("TRIAL_LANDSCAPE_FACET_CACHE", "0")
    assert _fresh(db).from_cache is False


def test_server_serves_sql_while_the_store_loads_then_the_mapped_cache(scratch):
    from services.dashboard import engine

    db, root = scratch
    stamp = _fresh(db).refreshed_at
    facetstore.shutil.rmtree(root / facetstore.cache_key(stamp))
    _drop_copy(db)  # neither the folder nor the database's copy: the arrays must be loaded by COPY
    facetstore.forget()
    server = engine.MemoryEngine(db)
    server.serve_sql_while_loading = True  # what warm() sets at a server's start
    f, _ = Filters.from_query({"status": "ANY"})
    expected = stats.dashboard(f, engine=engine.SqlEngine(db), timeout_ms=60_000).as_dict()
    with facetstore._lock:  # the background load cannot finish while the test holds the store's lock
        during = stats.dashboard(f, engine=server, timeout_ms=60_000)
        assert during.mode == "sql" and server.loading()
        assert server.count(f) == expected["kpis"]["matching_trials"]
        loader = facetstore._background[db.url]
        assert loader.is_alive()
    loader.join(timeout=120)
    assert not loader.is_alive()
    after = stats.dashboard(f, engine=server, timeout_ms=60_000)
    assert after.mode == "memory" and not server.loading()
    assert after.as_dict() == during.as_dict() == expected
    assert (root / facetstore.cache_key(stamp) / "manifest.json").is_file()  # the background load wrote it
    # ... in a child process: this one mapped what the child wrote and published
    assert _loaded_store(db).from_cache is True and _copies(db) == [facetstore.cache_key(stamp)]

    facetstore.forget()  # a restart with the cache present: the first call maps it, no SQL detour
    first = stats.dashboard(f, engine=server, timeout_ms=60_000)
    assert first.mode == "memory" and facetstore.store_for(db).from_cache is True


def test_a_cache_build_whose_parent_is_gone_builds_nothing(scratch, tmp_path):
    db, _ = scratch
    stamp = _fresh(db).refreshed_at
    not_its_parent = os.getppid()  # the child's parent is this process, not this process's parent
    done = subprocess.run([sys.executable, "-m", "services.dashboard.facetstore", "--build-cache", str(tmp_path),
                           stamp, str(not_its_parent)], cwd=PROJECT, capture_output=True, timeout=120,
                          env={**os.environ, facetstore.BUILD_URL_ENV: db.url})
    assert done.returncode == 1 and list(tmp_path.iterdir()) == []


def test_a_failed_child_build_falls_back_to_a_load_here(scratch, monkeypatch, caplog):
    db, root = scratch
    stamp = _fresh(db).refreshed_at
    facetstore.shutil.rmtree(root / facetstore.cache_key(stamp))
    _drop_copy(db)
    monkeypatch.setattr(facetstore, "BUILD_URL_ENV", "NOT_THE_URL_VARIABLE")  # the child finds no database
    facetstore.forget()
    facetstore.warm_up(db)
    store = _loaded_store(db)
    assert store is not None and store.from_cache is False  # loaded by COPY in this process
    assert "the child building the facet start cache failed" in caplog.text


def _rebuild_in_the_background(db: Database, root: Path, monkeypatch: pytest.MonkeyPatch,
                               quiet_s: float) -> tuple[Any, list[float]]:
    """A server's warm-up with its cache folder gone (the database's copy kept) while a page is being drawn, waiting
    for its pages to be quiet for `quiet_s`: the warm-up thread and the times its child build started."""
    from services.data import startup

    stamp = _fresh(db).refreshed_at
    facetstore.shutil.rmtree(root / facetstore.cache_key(stamp))
    facetstore.forget()
    monkeypatch.setattr(facetstore, "BUILD_QUIET_S", quiet_s)
    builds: list[float] = []
    build = facetstore.build_cache_in_child
    monkeypatch.setattr(facetstore, "build_cache_in_child",
                        lambda *args: builds.append(startup.time.monotonic()) or build(*args))
    waiting = facetstore.threading.Event()
    wait = startup.wait_until_quiet

    def noted_wait(*args: Any, **kwargs: Any) -> None:
        waiting.set()
        wait(*args, **kwargs)

    monkeypatch.setattr(startup, "wait_until_quiet", noted_wait)
    monkeypatch.setattr(startup, "_last_page", [startup.time.monotonic() + 3600])  # a page being drawn
    warm = facetstore.threading.Thread(target=facetstore.warm_up, args=(db,), daemon=True)
    warm.start()
    assert waiting.wait(60)  # the warm-up found neither folder nor a loaded store, and waits for the pages
    return warm, builds


def test_a_servers_rebuild_waits_until_its_pages_have_been_quiet(scratch, monkeypatch):
    """The first visitor's page (the stored landing view) is drawn before the child fetches or loads."""
    from services.data import startup

    db, root = scratch
    warm, builds = _rebuild_in_the_background(db, root, monkeypatch, 0.5)
    warm.join(timeout=1.0)  # however long the pages take, nothing is built meanwhile
    assert warm.is_alive() and not builds and _loaded_store(db) is None
    startup.page_activity()  # the page is drawn
    last_page = startup._last_page[0]
    warm.join(timeout=120)
    assert len(builds) == 1 and builds[0] - last_page >= 0.5
    assert facetstore.ready_store(db) is not None and _loaded_store(db).from_cache is True


def test_a_page_that_needs_the_arrays_starts_the_rebuild_at_once(scratch, monkeypatch):
    """... but a page that needs the arrays (any view but the stored landing view) does not wait for quiet: it
    waits for the fetch of the database's copy (a second or two) instead of SQL at registry scale."""
    from services.data import startup

    db, root = scratch
    monkeypatch.setattr(facetstore, "BUILD_WAIT_AT_MOST_S", 3600.0)
    warm, builds = _rebuild_in_the_background(db, root, monkeypatch, 3600.0)  # as if the pages were never quiet
    asked = startup.time.monotonic()
    got: list[Any] = []
    page = facetstore.threading.Thread(target=lambda: got.append(facetstore.ready_store(db)), daemon=True)
    page.start()
    page.join(timeout=120)  # not an hour
    warm.join(timeout=120)
    assert not page.is_alive() and not warm.is_alive()
    assert got[0] is not None and got[0].from_cache is True and len(builds) == 1 and builds[0] >= asked
    assert len(builds) == 1


# ---- the copy in the database (services/dashboard/facetcopy.py) -------------------------------------------------
def test_a_load_by_copy_keeps_the_cache_in_the_database_too(scratch):
    db, root = scratch
    _drop_copy(db)
    loaded, key = _loaded_by_copy(db, root)
    assert _copies(db) == [key]
    folder = root / key
    for path in folder.iterdir():  # byte for byte what the folder holds, in pieces
        kept = b"".join(bytes(r["data"]) for r in db.fetch_rows(
            "SELECT data FROM app.facet_copy WHERE key = :k AND name = :n ORDER BY part", {"k": key, "n": path.name}))
        assert kept == path.read_bytes(), path.name


def test_a_host_without_the_folder_fetches_the_databases_copy_instead_of_copying(scratch):
    db, root = scratch
    loaded = _fresh(db)
    key = facetstore.cache_key(loaded.refreshed_at)
    assert facetcopy.available(db, key)
    facetstore.shutil.rmtree(root / key)  # a fresh container, another host, a deleted folder
    child = _store_in_a_new_process(db)
    assert (child["from_cache"], child["copies"], child["n"]) == (True, 0, loaded.n)
    assert (root / key / "manifest.json").is_file()  # fetched into this host's folder: the next start maps it
    fetched = _fresh(db)
    for name, value in vars(loaded).items():
        if name not in facetstore._TRANSIENT:
            assert _same(getattr(fetched, name), value), name


@pytest.mark.parametrize("damage", ["short piece", "no manifest", "missing file"])
def test_a_damaged_database_copy_is_ignored_and_replaced(scratch, damage, caplog):
    db, root = scratch
    key = facetstore.cache_key(_fresh(db).refreshed_at)
    facetstore.shutil.rmtree(root / key)
    if damage == "short piece":
        db.execute("UPDATE app.facet_copy SET data = substring(data FROM 1 FOR 10) WHERE key = :k AND name = 'nct.npy'",
                   {"k": key})
    elif damage == "no manifest":
        db.execute("DELETE FROM app.facet_copy WHERE key = :k AND name = 'manifest.json'", {"k": key})
    else:
        db.execute("DELETE FROM app.facet_copy WHERE key = :k AND name = 'site_row.npy'", {"k": key})
    rebuilt = _fresh(db)
    assert rebuilt.from_cache is False  # loaded by COPY, the numbers from the database itself
    if damage != "no manifest":  # without its manifest the copy is not there at all: nothing to warn about
        assert "could not fetch the facet start cache" in caplog.text
    assert not list(root.glob(".tmp-*"))  # nothing half-fetched left behind
    assert _copies(db) == [key] and facetcopy.fetch(db, root / "elsewhere", key) is not None  # whole again


def test_a_half_published_copy_is_never_read(scratch):
    db, root = scratch
    key = facetstore.cache_key(_fresh(db).refreshed_at)
    facetstore.shutil.rmtree(root / key)
    _drop_copy(db)
    # What a writer killed mid-way leaves: pieces under its private key, never under the public one.
    db.execute("INSERT INTO app.facet_copy (key, name, part, data) VALUES ('.tmp-crashed', 'manifest.json', 0, :d)",
               {"d": b"{}"})
    assert not facetcopy.available(db, key) and facetcopy.fetch(db, root, key) is None
    assert _fresh(db).from_cache is False
    assert _copies(db) == [key]  # the next publish removed the crashed writer's pieces


def test_a_server_start_with_only_the_databases_copy_never_serves_sql(scratch):
    from services.dashboard import engine

    db, root = scratch
    stamp = _fresh(db).refreshed_at
    facetstore.shutil.rmtree(root / facetstore.cache_key(stamp))
    facetstore.forget()
    server = engine.MemoryEngine(db)
    server.serve_sql_while_loading = True  # what warm() sets at a server's start
    first = stats.dashboard(Filters(), engine=server, timeout_ms=60_000)
    assert first.mode == "memory" and facetstore.store_for(db).from_cache is True


def test_keep_copy_publishes_a_folder_written_before_the_database_kept_copies(scratch):
    db, root = scratch
    key = facetstore.cache_key(_fresh(db).refreshed_at)
    _drop_copy(db)
    facetstore.keep_copy(db)
    assert _copies(db) == [key]


def test_a_read_only_database_keeps_no_copy_and_says_why(scratch, tmp_path, caplog):
    db, root = scratch
    folder = root / facetstore.cache_key(_fresh(db).refreshed_at)
    reader = Database(db.url, label="read only", read_only=True)
    try:
        assert facetcopy.publish(reader, folder) is False
    finally:
        reader.close()
    assert "could not keep the facet start cache in the database" in caplog.text


# ---- the landing view kept in the database (services/dashboard/landing.py) ----------------------------------------
def test_a_start_without_any_cache_shows_the_stored_landing_view_at_once(scratch, monkeypatch):
    from services.dashboard import engine, landing

    db, root = scratch
    expected = stats.dashboard(Filters(), engine=engine.MemoryEngine(db), timeout_ms=60_000)  # computes and stores it
    countries = engine.MemoryEngine(db).country_names()  # the sidebar's list: stored as well
    stamp = facetstore.store_for(db).refreshed_at
    facetstore.shutil.rmtree(root / facetstore.cache_key(stamp))
    _drop_copy(db)  # neither the folder nor the database's copy: the arrays would be loaded by COPY for a while
    facetstore.forget()
    server = engine.MemoryEngine(db)
    server.serve_sql_while_loading = True  # what warm() sets at a server's start

    def no_sql(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("SQL computed the dashboard")

    monkeypatch.setattr(engine.SqlEngine, "dashboard_frames", no_sql)
    monkeypatch.setattr(engine.SqlEngine, "country_names", no_sql)
    with facetstore._lock:  # the store cannot be loaded meanwhile
        assert stats.landing_stored(db)  # what a server's warm-up checks before showing it to its first visitors
        first = stats.dashboard(Filters(), engine=server, timeout_ms=60_000)
        assert first.as_dict() == expected.as_dict() and first.mode == "memory"
        assert server.country_names() == countries and countries
        with pytest.raises(AssertionError, match="SQL computed"):  # any other view is not stored: SQL answers it
            stats.dashboard(Filters.from_query({"status": "ANY"})[0], engine=server, timeout_ms=60_000)
        monkeypatch.setattr(facetstore, "generation", lambda _db: "a newer import")
        assert not stats.landing_stored(db)
        with pytest.raises(AssertionError, match="SQL computed"):  # nor the landing view of another generation
            stats.dashboard(Filters(), engine=server, timeout_ms=60_000)
    loader = facetstore._background.get(db.url)
    if loader is not None:
        loader.join(timeout=120)
    assert landing.load_dashboard(db, stamp, {**stats.FACETS, "new facet": {"top": 5}}) is None  # other definitions
    assert landing.load_dashboard(db, stamp, stats.FACETS) is not None
    monkeypatch.setattr(landing, "release", lambda: "another release")  # same data, the code that counts changed
    assert landing.load_dashboard(db, stamp, stats.FACETS) is None
    assert db.fetch_value("SELECT count(DISTINCT stamp) FROM app.landing") == 1  # the latest generation only


def test_stored_landing_frames_read_back_exactly(scratch):
    from services.dashboard import engine, landing

    db, _ = scratch
    frames = engine.MemoryEngine(db).dashboard_frames(Filters(), stats.FACETS, None, timeout_ms=60_000)
    back = landing.decode(landing.encode(frames))
    assert (back.kpis, back.funnel, back.errors) == (frames.kpis, frames.funnel, {})
    assert set(back.raw) == set(frames.raw)
    for name, df in frames.raw.items():
        pd.testing.assert_frame_equal(back.raw[name], df, obj=name)


def test_a_load_a_page_starts_does_not_wait_for_quiet(scratch, monkeypatch):
    """A page that finds neither folder nor copy (after an import, say) gets SQL while the arrays load, at once."""
    from services.data import startup

    db, root = scratch
    stamp = _fresh(db).refreshed_at
    facetstore.shutil.rmtree(root / facetstore.cache_key(stamp))
    _drop_copy(db)
    facetstore.forget()
    monkeypatch.setattr(facetstore, "BUILD_QUIET_S", 3600.0)
    monkeypatch.setattr(facetstore, "BUILD_WAIT_AT_MOST_S", 3600.0)
    startup.page_activity()
    assert facetstore.ready_store(db) is None  # SQL answers this page
    loader = facetstore._background[db.url]
    loader.join(timeout=120)  # not the hour of quiet the pages never give
    assert not loader.is_alive() and _loaded_store(db) is not None


def test_the_pages_caches_see_an_import_by_another_process(scratch, monkeypatch):
    """The dashboard cache and the pages' cache keep a result per data generation: after an import elsewhere (a
    CLI import, another server), the next call computes anew instead of serving the old numbers for ten minutes."""
    from services.ui import state

    db, _ = scratch
    _fresh(db)
    monkeypatch.setattr(state.runtime, "get_db", lambda: db)
    stats.clear_cache()
    state.clear_cache()
    f = Filters()
    first = stats.cached_dashboard(f, db=db)
    listed = state.cached(stats.dashboard, f)
    assert stats.cached_dashboard(f, db=db) is first and state.cached(stats.dashboard, f) is listed  # hits
    monkeypatch.setattr(facetstore, "generation", lambda _db: "a newer import")
    assert stats.cached_dashboard(f, db=db) is not first
    assert state.cached(stats.dashboard, f) is not listed
