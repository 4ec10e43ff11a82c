"""Which database this process uses, and getting it ready (schema, first-start sample load).

DATABASE_URL set → that server (AACT restore, any PostgreSQL with ctgov, the AACT cloud).
Unset → the embedded PostgreSQL under .data/, created and loaded with the shipped sample on first
start. App state lives in schema `app` of the same database when it is writable, else in
APP_DATABASE_URL (default: the embedded server).
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from services import settings
from services.data import embedded, sitename, studymesh
from services.data.db import Database, schema_files
from services.data.startup import PROGRESS
from services.errors import QueryFailed

PROJECT_DIR = Path(__file__).resolve().parents[2]
# In this order: the CSV-only studies' upgrades replace their CSV rows, then criteria text is attached to the
# studies that are still CSV-only (data/PROVENANCE.md, data/sample-v2/PROVENANCE.md).
SAMPLE_FILES = (
    ("ctgov-json", PROJECT_DIR / "data" / "ctgov_sample.jsonl.gz"),
    ("ctgov-csv", PROJECT_DIR / "data" / "ctgov_sample_csv.jsonl.gz"),
    ("ctgov-json", PROJECT_DIR / "data" / "sample-v2" / "full_records.jsonl.gz"),
    ("ctgov-json", PROJECT_DIR / "data" / "sample-v2" / "csv_only_upgrades.jsonl.gz"),
    ("criteria-fill", PROJECT_DIR / "data" / "sample-v2" / "criteria_fill.jsonl.gz"),
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
    """STATEMENT_TIMEOUT_MS (at least 1: 0 would switch PostgreSQL's time limit off)."""
    return settings.current().statement_timeout_ms


def _pool_size() -> int:
    return settings.current().db_pool_size


def apply_schema(db: Database) -> None:
    """Create every schema object (idempotent)."""
    for path in schema_files():
        db.execute_script(path.read_text(encoding="utf-8"))


def schema_fingerprint() -> str:
    """A digest of every schema file's name and text: equal digests mean nothing to apply."""
    digest = hashlib.sha256()
    for path in schema_files():
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _schema_current(db: Database, fingerprint: str) -> bool:
    if db.fetch_value("SELECT to_regclass('app.meta') IS NOT NULL") is not True:
        return False
    return bool(db.fetch_value("SELECT value FROM app.meta WHERE key = 'schema_fingerprint'") == fingerprint)


def ensure_schema(db: Database) -> None:
    """Apply the schema unless this database already has exactly the current schema files applied."""
    fingerprint = schema_fingerprint()
    if not _schema_current(db, fingerprint):
        files = schema_files()
        with PROGRESS.stage("Creating the AACT schema", total=len(files), unit="schema files") as advance:
            for n, path in enumerate(files, start=1):
                db.execute_script(path.read_text(encoding="utf-8"))
                advance(n)
        db.execute("INSERT INTO app.meta (key, value) VALUES ('schema_fingerprint', :v) "
                   "ON CONFLICT (key) DO UPDATE SET value = :v, updated_at = now()", {"v": fingerprint})
    sitename.ensure_built(db)  # a derived table newer than the database's last import, or built by an older rule
    studymesh.ensure_built(db)  # MeSH tables once per MeSH version; each study's headings once per generation


_KIND_TEXT = {"ctgov-json": "JSON studies", "ctgov-csv": "CSV studies (sites geocoded offline)",
              "criteria-fill": "eligibility criteria for CSV-only records"}


def _record_count(path: Path) -> int | None:
    """Records in a JSON-lines sample file (one per non-blank line); None for other formats."""
    if not path.name.endswith((".jsonl", ".jsonl.gz")):
        return None
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return sum(1 for line in fh if line.strip())


def load_sample(db: Database) -> list[dict[str, object]]:
    """Import the shipped sample files (idempotent: re-running replaces, never duplicates).

    Each file is named stages on the start's progress (reading n of N records, then saving; the statistics and
    derived tables once, after the last file), whatever files SAMPLE_FILES lists.
    """
    from services.data.loaders import import_criteria_fill, import_ctgov_csv, import_ctgov_json

    importers = {"ctgov-json": import_ctgov_json, "ctgov-csv": import_ctgov_csv, "criteria-fill": import_criteria_fill}
    reports = []
    files = list(SAMPLE_FILES)
    if any(kind == "ctgov-csv" for kind, _ in files):
        from services.data import geo

        with PROGRESS.stage("Preparing the offline gazetteer for geocoding sites"):
            geo.warm_up()
    for number, (kind, path) in enumerate(files, start=1):
        last = number == len(files)  # statistics and derived tables once, after the last file
        what = _KIND_TEXT.get(kind, kind)
        of_files = f", file {number} of {len(files)}" if len(files) > 1 else ""
        saving = "Saving the studies" + (" and building derived data (facets, search terms)" if last else "")
        if kind not in ("ctgov-json", "ctgov-csv"):
            with PROGRESS.stage(f"Loading {what} from {path.name}{of_files}" + (" and building derived data"
                                                                                 if last else "")):
                reports.append(importers[kind](db, path, refresh=last).as_dict())
            continue
        with contextlib.ExitStack() as stages:
            advance = stages.enter_context(PROGRESS.stage(f"Loading {what} from {path.name}{of_files}",
                                                          total=_record_count(path), unit="records"))

            def progress(phase: str, count: int, advance: Callable[[int], None] = advance,
                         stages: contextlib.ExitStack = stages, saving: str = saving) -> None:
                if phase == "read":
                    advance(count)
                    return
                stages.close()  # reading is done: the write is its own stage
                stages.enter_context(PROGRESS.stage(saving, total=count, unit="studies"))

            importer = import_ctgov_json if kind == "ctgov-json" else import_ctgov_csv
            reports.append(importer(db, path, refresh=last, progress=progress).as_dict())
    studymesh.ensure_built(db)
    db.execute("INSERT INTO app.meta (key, value) VALUES ('sample_loaded', 'yes') "
               "ON CONFLICT (key) DO UPDATE SET value = 'yes', updated_at = now()")
    return reports


def _embedded_ready(db: Database) -> None:
    lock = FileLock(str(embedded.data_dir() / ".bootstrap.lock"), timeout=600)
    with lock:
        ensure_schema(db)
        loaded = db.fetch_value("SELECT value FROM app.meta WHERE key = 'sample_loaded'")
        if loaded != "yes":
            _log.info("first start: loading the shipped sample")
            load_sample(db)


def embedded_url() -> str:
    """Start (or attach to) the embedded server and return its URL."""
    embedded.data_dir().mkdir(parents=True, exist_ok=True)
    fresh = not (embedded.data_dir() / "pg").exists()
    name = ("Creating the database (a new embedded PostgreSQL under " if fresh else
            "Starting the embedded PostgreSQL server (") + f"{embedded.data_dir()})"
    with PROGRESS.stage(name, announce=fresh):
        return embedded.start()


def ready() -> bool:
    """True once this process's trial database has been made ready (get_db() returns at once). Never waits: a start
    in progress holds the lock (a page asks this to decide whether to watch that start)."""
    return "main" in _state  # one dict look-up: atomic, and the entry is set once, at the end of the start


def get_db() -> Database:
    """The trial database for this process (created and made ready once)."""
    with _lock:
        if "main" in _state:
            return _state["main"]
        url = settings.current().database_url
        if url:
            connect = functools.partial(Database, url, statement_timeout_ms=_timeout(), pool_size=_pool_size())
            db = connect()
            health = db.health()
            if health.ok and not health.read_only:
                try:
                    apply_schema(db)
                    sitename.ensure_built(db)
                    studymesh.ensure_built(db)
                except QueryFailed as err:  # e.g. no CREATE privilege: use it as it is
                    _log.warning("could not apply schema to %s: %s", db.label, err)
                    db = connect(read_only=True)
            elif health.ok:
                db = connect(read_only=True)
        else:
            db = Database(embedded_url(), statement_timeout_ms=_timeout(), pool_size=_pool_size(),
                          label=f"embedded PostgreSQL ({embedded.data_dir()})")
            _embedded_ready(db)
        _state["main"] = db
        studymesh.warm_up()  # the condition model's vocabulary, before the first typed condition needs it
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
        url = settings.current().app_database_url or embedded_url()
        app_db = Database(url, statement_timeout_ms=_timeout(), pool_size=2)
        apply_schema(app_db)
        _state["app"] = app_db
        return app_db


def source() -> Source:
    """Describe the connected trial database without a password."""
    db = get_db()
    kind = "external" if settings.current().database_url else "embedded"
    return Source(kind, public_label(db.label), db.read_only)


def public_label(label: str) -> str:
    """A database's label fit for every visitor: a local socket's folder (a path on the server) is left out.
    """
    if not label.startswith("socket /"):
        return label
    return re.sub(r"^socket /\S*?(?=/[^/]*$)", "local socket", label)


def reset() -> None:
    """Forget this process's database handles (tests, `db reset`)."""
    with _lock:
        for db in _state.values():
            db.close()
        _state.clear()
