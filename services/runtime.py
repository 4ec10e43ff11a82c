"""Which database this process uses, and getting it ready (schema, first-start sample load).

DATABASE_URL set → that server (AACT restore, any PostgreSQL with ctgov, the AACT cloud).
Unset → the embedded PostgreSQL under .data/, created and loaded with the shipped sample on first
start. App state lives in schema `app` of the same database when it is writable, else in
APP_DATABASE_URL (default: the embedded server).
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from services import embedded
from services.db import DEFAULT_TIMEOUT_MS, Database, describe_url, schema_files
from services.errors import QueryFailed

PROJECT_DIR = Path(__file__).resolve().parent.parent
SAMPLE_FILES = (
    ("ctgov-json", PROJECT_DIR / "data" / "ctgov_sample.jsonl.gz"),
    ("ctgov-csv", PROJECT_DIR / "data" / "ctgov_sample_csv.jsonl.gz"),
)
_log = logging.getLogger(__name__)
_lock = threading.Lock()
_state: dict[str, Database] = {}


@dataclass(frozen=True)
class Source:
    """Where the trial data comes from, for footers and the Data page."""

    kind: str  # "embedded" | "external"
    description: str
    read_only: bool


def _timeout() -> int:
    try:
        return int(os.environ.get("STATEMENT_TIMEOUT_MS", DEFAULT_TIMEOUT_MS))
    except ValueError:
        return DEFAULT_TIMEOUT_MS


def _pool_size() -> int:
    try:
        return max(1, min(5, int(os.environ.get("DB_POOL_SIZE", "5"))))
    except ValueError:
        return 5


def apply_schema(db: Database) -> None:
    """Create every schema object (idempotent)."""
    for path in schema_files():
        db.execute_script(path.read_text(encoding="utf-8"))


def load_sample(db: Database) -> list[dict[str, object]]:
    """Import the shipped sample files (idempotent: re-running replaces, never duplicates)."""
    from services.loaders import import_ctgov_csv, import_ctgov_json

    reports = []
    for kind, path in SAMPLE_FILES:
        importer = import_ctgov_json if kind == "ctgov-json" else import_ctgov_csv
        reports.append(importer(db, path).as_dict())
    db.execute("INSERT INTO app.meta (key, value) VALUES ('sample_loaded', 'yes') "
               "ON CONFLICT (key) DO UPDATE SET value = 'yes', updated_at = now()")
    return reports


def _embedded_ready(db: Database) -> None:
    lock = FileLock(str(embedded.data_dir() / ".bootstrap.lock"), timeout=600)
    with lock:
        apply_schema(db)
        loaded = db.fetch_value("SELECT value FROM app.meta WHERE key = 'sample_loaded'")
        if loaded != "yes":
            _log.info("first start: loading the shipped sample")
            load_sample(db)


def embedded_url() -> str:
    """Start (or attach to) the embedded server and return its URL."""
    embedded.data_dir().mkdir(parents=True, exist_ok=True)
    return embedded.start()


def get_db() -> Database:
    """The trial database for this process (created and made ready once)."""
    with _lock:
        if "main" in _state:
            return _state["main"]
        url = os.environ.get("DATABASE_URL", "").strip()
        if url:
            db = Database(url, statement_timeout_ms=_timeout(), pool_size=_pool_size(), label=describe_url(url))
            health = db.health()
            if health.ok and not health.read_only:
                try:
                    apply_schema(db)
                except QueryFailed as err:  # e.g. no CREATE privilege: use it as it is
                    _log.warning("could not apply schema to %s: %s", db.label, err)
                    db = Database(url, read_only=True, statement_timeout_ms=_timeout(), pool_size=_pool_size(),
                                  label=describe_url(url))
            elif health.ok:
                db = Database(url, read_only=True, statement_timeout_ms=_timeout(), pool_size=_pool_size(),
                              label=describe_url(url))
        else:
            db = Database(embedded_url(), statement_timeout_ms=_timeout(), pool_size=_pool_size(),
                          label=f"embedded PostgreSQL ({embedded.data_dir()})")
            _embedded_ready(db)
        _state["main"] = db
        return db


def get_app_db() -> Database:
    """Where app state (sessions, saved views) lives: the trial database if writable, else APP_DATABASE_URL."""
    main = get_db()
    with _lock:
        if "app" in _state:
            return _state["app"]
        if not main.read_only:
            _state["app"] = main
            return main
        url = os.environ.get("APP_DATABASE_URL", "").strip() or embedded_url()
        app_db = Database(url, statement_timeout_ms=_timeout(), pool_size=2, label=describe_url(url))
        apply_schema(app_db)
        _state["app"] = app_db
        return app_db


def source() -> Source:
    """Describe the connected trial database without a password."""
    db = get_db()
    kind = "external" if os.environ.get("DATABASE_URL", "").strip() else "embedded"
    return Source(kind, db.label, db.read_only)


def reset() -> None:
    """Forget this process's database handles (tests, `db reset`)."""
    with _lock:
        for db in _state.values():
            db.close()
        _state.clear()
