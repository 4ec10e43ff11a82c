"""The start cache's copy in the database (app.facet_copy, sql/schema/055_app_facet_copy.sql).

The in-process engine maps its arrays from a cache folder beside the database (facetstore.write_cache /
read_cache). A server whose folder is missing or stale — another host of the same database, a fresh container, a
deleted folder — would load them by COPY (~20 s at 575,000 studies) while SQL serves. With this copy it fetches
the folder's files from the database instead (~1 s for 300 MB) and maps them as usual. Whoever builds a generation
by COPY publishes it here; only the latest generation is kept.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import shutil
import tempfile
import time
from pathlib import Path

from services.data.db import Database, load_sql
from services.errors import TrialLandscapeError

_log = logging.getLogger(__name__)

PIECE_BYTES = 8 << 20  # one row's share of a file: large enough to stream fast, small enough for one message
TIMEOUT_MS = 300_000


def available(db: Database, key: str) -> bool:
    """True when the database holds the published copy of the cache folder `key`."""
    try:
        return db.fetch_value(load_sql("facet_copy_exists"), {"key": key}, timeout_ms=5_000) is True
    except TrialLandscapeError:  # no such table (an older schema) or no right to read it: no copy
        return False


def publish(db: Database, folder: Path) -> bool:
    """Copy the cache folder's files into the database as the only published copy. False (logged) when this
    database cannot take it (read-only role, a full disk); the cache folder itself is unaffected."""
    private = f".tmp-{secrets.token_hex(8)}"
    started = time.perf_counter()
    try:
        # The manifest last: its size check covers every file, and a copy without it is never read.
        for path in sorted(folder.iterdir(), key=lambda p: p.name == "manifest.json"):
            data = path.read_bytes()  # one array: tens of MB at most
            for part, start in enumerate(range(0, max(len(data), 1), PIECE_BYTES)):
                db.execute(load_sql("facet_copy_put"), {"key": private, "name": path.name, "part": part,
                                                        "data": data[start:start + PIECE_BYTES]},
                           timeout_ms=TIMEOUT_MS)
            del data
        db.fetch_rows(load_sql("facet_copy_publish"), {"private": private, "key": folder.name},
                      timeout_ms=TIMEOUT_MS)
    except (TrialLandscapeError, OSError) as err:
        _log.warning("could not keep the facet start cache in the database: %s", err)
        with contextlib.suppress(TrialLandscapeError):
            db.execute("DELETE FROM app.facet_copy WHERE key = :key", {"key": private}, timeout_ms=TIMEOUT_MS)
        return False
    _log.info("facet start cache %s kept in the database in %.1f s", folder.name, time.perf_counter() - started)
    return True


def fetch(db: Database, root: Path, key: str) -> Path | None:
    """Write the published copy `key` into `<root>/<key>/` (a temporary folder renamed into place) and return it;
    None when there is no complete copy (then nothing is left behind)."""
    final = root / key
    if (final / "manifest.json").is_file():
        return final
    started = time.perf_counter()
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key}-", dir=root))
    try:
        manifest_bytes = _file(db, key, "manifest.json")
        manifest = json.loads(manifest_bytes)
        files: dict[str, int] = manifest["files"]
        for name, size in files.items():
            if "/" in name or name.startswith("."):
                raise ValueError(f"unexpected file name {name!r}")
            data = _file(db, key, name)
            if len(data) != size:
                raise ValueError(f"{name}: {len(data)} bytes, the manifest says {size}")
            (tmp / name).write_bytes(data)
            del data
        (tmp / "manifest.json").write_bytes(manifest_bytes)
        if final.exists():  # another process of this host fetched or built it first: as good
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.rename(final)
    except (TrialLandscapeError, OSError, ValueError, KeyError, TypeError) as err:
        _log.warning("could not fetch the facet start cache %s from the database (%s); loading by COPY", key, err)
        shutil.rmtree(tmp, ignore_errors=True)
        return None
    _log.info("facet start cache %s fetched from the database in %.1f s", key, time.perf_counter() - started)
    return final


def _file(db: Database, key: str, name: str) -> bytes:
    rows = db.fetch_rows(load_sql("facet_copy_file"), {"key": key, "name": name}, timeout_ms=TIMEOUT_MS)
    if not rows:
        raise ValueError(f"{name} is missing")
    return b"".join(bytes(r["data"]) for r in rows)
