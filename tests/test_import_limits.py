"""Importers with limits: zip and gzip bombs, a folder given as a file, a symbolic link to /etc/passwd.

Each case runs the real command line in a child process (so its peak memory is its own), must end with a clear
message that quotes nothing from the file, stay under 300 MB resident, and leave the database as it was.
"""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from services.data.loaders import guard
from services.data.loaders.common import STUDY_TABLES
from services.errors import BadInput

PROJECT = Path(__file__).resolve().parent.parent
RSS_LIMIT_KB = 300 * 1024
BOMB_BYTES = 400 * 1024**2
# VmHWM is the peak resident set of this process's own memory (getrusage's ru_maxrss would carry the forking
# pytest process's peak over exec).
CHILD = """
import re, sys
from services.cli import main
try:
    rc = main(sys.argv[1:])
except SystemExit as stop:
    rc = stop.code if isinstance(stop.code, int) else 1
with open("/proc/self/status") as fh:
    print("MAXRSS_KB", re.search(r"VmHWM:\\s+(\\d+) kB", fh.read()).group(1), file=sys.stderr)
sys.exit(rc)
"""


def _state(db: Any) -> dict[str, int]:
    counts = {t: int(db.fetch_value(f"SELECT count(*) FROM ctgov.{t}")) for t in STUDY_TABLES}
    counts["app.study_sources"] = int(db.fetch_value("SELECT count(*) FROM app.study_sources"))
    counts["app.imports"] = int(db.fetch_value("SELECT count(*) FROM app.imports"))
    return counts


def _run_import(db: Any, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, int]:
    """(exit code, output, peak RSS in KB) of `python -m services import …` against the test database.

    The derived tables are brought up to date here first, as the child's start would (an earlier test in this
    worker may have imported): the child then finds nothing to rebuild, and its peak is the import's own, not
    the MeSH vocabulary's (~200 MB) that a rebuild of each study's headings loads.
    """
    from services.data import runtime

    runtime.ensure_schema(db)
    child_env = {**os.environ, "DATABASE_URL": db.url, **(env or {})}
    done = subprocess.run([sys.executable, "-c", CHILD, "import", *args], cwd=PROJECT, env=child_env,
                          capture_output=True, text=True, timeout=600, check=False)
    rss = re.search(r"MAXRSS_KB (\d+)", done.stderr)
    assert rss, done.stderr[-2000:]
    return done.returncode, done.stdout + done.stderr, int(rss.group(1))


def _refused(db: Any, fragment: str, *args: str, env: dict[str, str] | None = None,
             never: tuple[str, ...] = ()) -> str:
    before = _state(db)
    code, out, rss_kb = _run_import(db, *args, env=env)
    assert code == 2, out[-2000:]
    assert fragment in out, out[-2000:]
    assert "Traceback" not in out
    for text in never:
        assert text not in out
    assert rss_kb < RSS_LIMIT_KB, f"peak RSS {rss_kb / 1024:.0f} MB"
    assert _state(db) == before
    return out


def _zeros_zip(path: Path, member: str, size: int, prefix: bytes = b"") -> None:
    block = b"\0" * (1 << 20)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        with zf.open(member, "w", force_zip64=True) as fh:
            fh.write(prefix)
            for _ in range(size // len(block)):
                fh.write(block)


def test_import_limits_json_zip_bomb_is_refused(db, scratch_dir: Path) -> None:
    bomb = scratch_dir / "ctg-studies.json.zip"
    _zeros_zip(bomb, "NCT00000001.json", BOMB_BYTES)
    assert bomb.stat().st_size < 2 * 1024**2  # a small file that unpacks to hundreds of MB
    out = _refused(db, "refusing what looks like a zip bomb", "ctgov-json", str(bomb))
    assert "NCT00000001.json" in out


def test_import_limits_aact_zip_bomb_is_refused(db, scratch_dir: Path) -> None:
    bomb = scratch_dir / "export.zip"
    _zeros_zip(bomb, "studies.txt", BOMB_BYTES, prefix=b"nct_id|brief_title\n")
    _refused(db, "refusing what looks like a zip bomb", "aact", str(bomb))


def test_import_limits_gzip_bomb_stops_at_the_line_limit(db, scratch_dir: Path) -> None:
    """gzip declares no size: the guard stops reading at the line limit instead."""
    bomb = scratch_dir / "studies.jsonl.gz"
    block = b" " * (1 << 20)
    with gzip.open(bomb, "wb", compresslevel=9) as fh:
        fh.write(b'{"protocolSection": ')
        for _ in range(BOMB_BYTES // len(block)):
            fh.write(block)
    _refused(db, "line 1 is longer than 32 MiB", "ctgov-json", str(bomb))


def test_import_limits_total_size_limit_applies(db, scratch_dir: Path) -> None:
    """Many short lines: the total decompressed limit (lowered here through its variable) stops the import."""
    path = scratch_dir / "rows.jsonl"
    path.write_text("\n" * (3 * 1024**2))
    _refused(db, f"expands to more than 1 MiB of data, the import limit ({guard.MAX_BYTES_ENV})", "ctgov-json",
             str(path), env={guard.MAX_BYTES_ENV: str(1024**2)})


@pytest.mark.parametrize("kind", ["ctgov-json", "ctgov-csv", "criteria-fill"])
def test_import_limits_folder_given_as_a_file_is_refused(db, scratch_dir: Path, kind: str) -> None:
    folder = scratch_dir / "studies.jsonl"
    folder.mkdir()
    _refused(db, "is a folder, not a file", kind, str(folder))


def test_import_limits_aact_member_symlink_to_passwd_is_refused(db, scratch_dir: Path) -> None:
    export = scratch_dir / "export"
    export.mkdir()
    (export / "studies.txt").symlink_to("/etc/passwd")
    passwd_lines = [line for line in Path("/etc/passwd").read_text().splitlines() if line.strip()]
    out = _refused(db, "is a symbolic link", "aact", str(export),
                   never=tuple(passwd_lines) + ("root:", "/bin/"))
    assert "studies.txt" in out


def test_import_limits_symlinked_file_is_refused(db, scratch_dir: Path) -> None:
    link = scratch_dir / "studies.jsonl"
    link.symlink_to("/etc/passwd")
    _refused(db, "is a symbolic link", "ctgov-json", str(link), never=("root:",))


def test_import_limits_guard_passes_ordinary_lines_and_counts_them() -> None:
    import io

    data = b"a\n" * 1000 + b"b" * 5000 + b"\n"
    budget = guard.Budget(10_000)
    reader = io.BufferedReader(guard.GuardedReader(io.BytesIO(data), "x", budget, 6000))
    assert reader.read() == data and budget.used == len(data)
    with pytest.raises(guard.BadInput, match=r"x: line 1001 is longer than 4,000 bytes"):
        io.BufferedReader(guard.GuardedReader(io.BytesIO(data), "x", guard.Budget(10_000), 4000)).read()


def test_import_limits_precheck_refuses_a_bomb_member_and_passes_folders(tmp_path: Path) -> None:
    # The import command refuses a zip bomb before it opens the database: a CI run saw the refusing
    # child peak at 408 MB because opening the database had loaded the MeSH vocabulary first.
    ok = tmp_path / "ok.zip"
    with zipfile.ZipFile(ok, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("export/", "")
        zf.writestr("export/studies.txt", "nct_id|brief_title\nNCT00000001|A title\n")
    guard.precheck(ok)
    bomb = tmp_path / "bomb.zip"
    _zeros_zip(bomb, "NCT00000001.json", 64 * 1024**2)
    with pytest.raises(BadInput, match="zip bomb"):
        guard.precheck(bomb)
