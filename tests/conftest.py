"""Test fixtures: one real PostgreSQL per test session, loaded with the shipped sample.

By default the embedded server (a fresh data directory under .data/, removed afterwards).
With TEST_DATABASE_URL set, the same tests run against that server instead (schema applied,
sample imported — the imports are idempotent).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent
DATA = PROJECT / "data"
TEST_DATA_DIR = PROJECT / ".data" / f"test-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def pytest_configure(config: pytest.Config) -> None:
    # Every test in this process talks to the session's database, never the developer's .data/pg.
    os.environ.setdefault("TRIAL_LANDSCAPE_DATA_DIR", str(TEST_DATA_DIR))
    if os.environ.get("TEST_DATABASE_URL"):
        os.environ["DATABASE_URL"] = os.environ["TEST_DATABASE_URL"]
    else:
        os.environ.pop("DATABASE_URL", None)
    os.environ.pop("ANTHROPIC_API_KEY", None)


def pytest_unconfigure(config: pytest.Config) -> None:
    from services import embedded, runtime

    runtime.reset()
    if Path(os.environ["TRIAL_LANDSCAPE_DATA_DIR"]) == TEST_DATA_DIR and TEST_DATA_DIR.exists():
        embedded.wipe(TEST_DATA_DIR / "pg")
        shutil.rmtree(TEST_DATA_DIR, ignore_errors=True)


@pytest.fixture(scope="session")
def db():  # noqa: ANN201 - returns services.db.Database
    """The session's trial database with the whole shipped sample loaded."""
    from services import runtime

    database = runtime.get_db()
    if os.environ.get("DATABASE_URL"):
        runtime.load_sample(database)
    return database


def _read_jsonl(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@pytest.fixture(scope="session")
def raw_v2() -> list[dict]:
    """The v2 JSON sample as parsed dicts (independent of our loader)."""
    return _read_jsonl(DATA / "ctgov_sample.jsonl.gz")


@pytest.fixture(scope="session")
def raw_csv() -> list[dict]:
    """The CSV-row sample as parsed dicts (independent of our loader)."""
    return _read_jsonl(DATA / "ctgov_sample_csv.jsonl.gz")


@pytest.fixture()
def scratch_dir() -> Iterator[Path]:
    """A fresh folder under .data/ for tests that make their own files or servers."""
    path = PROJECT / ".data" / f"scratch-{uuid.uuid4().hex[:8]}"
    path.mkdir(parents=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)
