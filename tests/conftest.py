"""Test fixtures: one real PostgreSQL per test run, loaded with the shipped sample.

By default the embedded server in a fresh data directory under .data/ (`.data/test-<pid>-<id>`), shared by every
pytest-xdist worker of the run and removed afterwards — also after Ctrl-C or a failing fixture: the process that
owns the run stops every server and child process started for that folder and deletes it, and a later run removes
the folders of runs that were killed outright (their pid is gone).
With TEST_DATABASE_URL set, the same tests run against that server instead (schema applied,
sample imported — the imports are idempotent).
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import session_cleanup

PROJECT = Path(__file__).resolve().parent.parent
DATA = PROJECT / "data"
SESSION_ENV = "TRIAL_LANDSCAPE_TEST_SESSION_DIR"  # the run's folder, handed from the owning process to its workers
# The owning process (plain pytest, or xdist's controller) picks the folder; xdist workers inherit it.
TEST_DATA_DIR = (Path(os.environ[SESSION_ENV]) if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get(SESSION_ENV)
                 else session_cleanup.new_session_dir(PROJECT / ".data"))


def _owner(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")


def _worker_dir() -> Path:
    return TEST_DATA_DIR / f"worker-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"


def _own_dir() -> bool:
    """True when this process's database lives in the run's folder (not TEST_DATABASE_URL, not a dev's own dir)."""
    here = Path(os.environ["TRIAL_LANDSCAPE_DATA_DIR"])
    return here == TEST_DATA_DIR or here == _worker_dir()


def pytest_configure(config: pytest.Config) -> None:
    if _owner(config):
        session_cleanup.sweep_dead_sessions(PROJECT / ".data")
        os.environ[SESSION_ENV] = str(TEST_DATA_DIR)
    # Every test in this process talks to the session's database, never the developer's .data/pg; an xdist worker
    # to its own copy of it (see _worker_database).
    os.environ.setdefault("TRIAL_LANDSCAPE_DATA_DIR", str(TEST_DATA_DIR))
    # Package-derived files (the gazetteer) once per run, shared by workers, scratch folders and their servers.
    os.environ["TRIAL_LANDSCAPE_CACHE_DIR"] = str(TEST_DATA_DIR / "cache")
    if not _owner(config) and Path(os.environ["TRIAL_LANDSCAPE_DATA_DIR"]) == TEST_DATA_DIR:
        os.environ["TRIAL_LANDSCAPE_DATA_DIR"] = str(_worker_dir())
    if os.environ.get("TEST_DATABASE_URL"):
        os.environ["DATABASE_URL"] = os.environ["TEST_DATABASE_URL"]
    else:
        os.environ.pop("DATABASE_URL", None)
    os.environ.pop("ANTHROPIC_API_KEY", None)
    # Live ClinicalTrials.gov look-ups go nowhere unless a test points them at its local fake (port 9: discard,
    # closed here): a stray click in a test says "could not reach" instead of reaching the internet.
    os.environ["CTGOV_API_URL"] = "http://127.0.0.1:9/api/v2"
    _guard_fast_tests()


# The fast tier (`pytest -m fast`): every test that is not a browser, slow or server test and asks for neither
# the session's database nor a scratch folder for servers. Such a test that reaches for a database or starts a
# server anyway fails and says so, in every run, so the tier stays fast without a list kept by hand.
NOT_FAST_MARKERS = ("browser", "slow", "server")
NOT_FAST_FIXTURES = frozenset({"db", "scratch_dir"})
_fast_test_running = False


def _is_fast(item: pytest.Item) -> bool:
    return (not NOT_FAST_FIXTURES & set(getattr(item, "fixturenames", ()))
            and not any(item.get_closest_marker(name) for name in NOT_FAST_MARKERS))


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by the marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _is_fast(item):
            item.add_marker(pytest.mark.fast)


def _refused_in_fast_tests(real: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(real)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        if _fast_test_running:
            raise RuntimeError(f"{real.__module__}.{real.__name__}: a test of the fast tier reached for a "
                               "database or a server. Ask for the `db` or `scratch_dir` fixture, or mark it "
                               "`server`.")
        return real(*args, **kwargs)
    return guarded


def _guard_fast_tests() -> None:
    from services.data import embedded, runtime

    for module, name in ((runtime, "get_db"), (runtime, "get_app_db"), (embedded, "start")):
        setattr(module, name, _refused_in_fast_tests(getattr(module, name)))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    global _fast_test_running
    _fast_test_running = item.get_closest_marker("fast") is not None
    try:
        return (yield)
    finally:
        _fast_test_running = False


def pytest_unconfigure(config: pytest.Config) -> None:
    from services.data import embedded, runtime

    runtime.reset()
    if _own_dir():
        embedded.stop(Path(os.environ["TRIAL_LANDSCAPE_DATA_DIR"]) / "pg")
    if _owner(config):
        session_cleanup.remove_session(TEST_DATA_DIR)


@pytest.fixture(scope="session", autouse=True)
def _worker_database(request: pytest.FixtureRequest) -> None:
    """Under pytest-xdist: before this worker's first test, copy the run's loaded database into its own folder."""
    # TRIAL_LANDSCAPE_TEST_NO_SAMPLE=1: runs whose tests never use the session database (test_session_cleanup's
    # child runs) skip the load; so does a run of the fast tier alone.
    if (os.environ.get("PYTEST_XDIST_WORKER") and not os.environ.get("TEST_DATABASE_URL") and _own_dir()
            and not all(item.get_closest_marker("fast") for item in request.session.items)
            and not os.environ.get("TRIAL_LANDSCAPE_TEST_NO_SAMPLE")):
        session_cleanup.prepare_worker_dir(TEST_DATA_DIR, Path(os.environ["TRIAL_LANDSCAPE_DATA_DIR"]), PROJECT)


@pytest.fixture(scope="session")
def db():  # noqa: ANN201 - returns services.data.db.Database
    """The session's trial database with the whole shipped sample loaded."""
    from services.data import runtime

    database = runtime.get_db()
    if os.environ.get("DATABASE_URL"):
        runtime.load_sample(database)
    return database


def _read_jsonl(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


# Every shipped file of full API v2 records, and the file of CSV rows some of them replace (read here on their
# own, not through runtime.SAMPLE_FILES, so a file the loader forgot shows up as a difference).
V2_FILES = (DATA / "ctgov_sample.jsonl.gz", DATA / "sample-v2" / "full_records.jsonl.gz",
            DATA / "sample-v2" / "csv_only_upgrades.jsonl.gz")
CSV_FILE = DATA / "ctgov_sample_csv.jsonl.gz"
FILL_FILE = DATA / "sample-v2" / "criteria_fill.jsonl.gz"


def _nct(study: dict) -> str:
    return study["protocolSection"]["identificationModule"]["nctId"]


@pytest.fixture(scope="session")
def raw_v2() -> list[dict]:
    """Every shipped API v2 study as parsed dicts (independent of our loader)."""
    return [study for path in V2_FILES for study in _read_jsonl(path)]


@pytest.fixture(scope="session")
def raw_csv(raw_v2: list[dict]) -> list[dict]:
    """The shipped CSV rows still in the sample: those no full v2 record replaces (independent of our loader)."""
    full = {_nct(s) for s in raw_v2}
    return [row for row in _read_jsonl(CSV_FILE) if row["NCT Number"] not in full]


@pytest.fixture(scope="session")
def raw_fill() -> list[dict]:
    """The shipped criteria fills for CSV-only studies as parsed dicts."""
    return _read_jsonl(FILL_FILE)


@pytest.fixture()
def scratch_dir() -> Iterator[Path]:
    """A fresh folder inside the run's test folder for tests that make their own files or servers.

    Afterwards any PostgreSQL still running in it is stopped (a left server would write into the folder again
    after it is deleted), then the folder is deleted.
    """
    path = TEST_DATA_DIR / f"scratch-{uuid.uuid4().hex[:8]}"
    path.mkdir(parents=True)
    yield path
    session_cleanup.stop_postgres_under(path)
    shutil.rmtree(path, ignore_errors=True)
