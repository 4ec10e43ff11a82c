"""Streaming imports: an import interrupted mid-way (Ctrl-C or a kill) leaves the database as it was; a JSON
array is read item by item across read-ahead boundaries with the same result as JSON lines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from services.data.db import run_sync
from services.data.loaders import jsonstream
from services.data.loaders.ctgov_json import read_studies
from services.errors import BadInput

PROJECT = Path(__file__).resolve().parent.parent
FIRST = 9_700_000  # NCT09700000 … : ids no sample study uses


def _big_export(path: Path, studies: int) -> Path:
    """studies.txt, then a facilities.txt large enough that its COPY is still running when we interrupt."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr("studies.txt", "nct_id|brief_title|last_update_posted_date\n" + "".join(
            f"NCT{FIRST + i:08d}|Study {i}|2024-01-01\n" for i in range(studies)))
        with zf.open("facilities.txt", "w") as fh:
            fh.write(b"id|nct_id|name|city|country\n")
            for i in range(studies * 40):
                fh.write(f"{i + 1}|NCT{FIRST + i % studies:08d}|Site {i}|Lyon|France\n".encode())
    return path


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_import_stream_interrupted_import_leaves_nothing(db: Any, scratch_dir: Path,
                                                        sig: signal.Signals) -> None:
    export = _big_export(scratch_dir / "big.zip", 20_000)
    before = db.fetch_value("SELECT count(*) FROM ctgov.studies")
    # Another session holds a SHARE lock on ctgov.studies: the import stages every file but cannot write its
    # merge until we let go, so it is still running when the signal comes, however slowly this process reads
    # its output (on a machine whose cores were busy, the import once ended before the signal was sent).
    holder = run_sync(asyncpg.connect(db.url))
    run_sync(holder.execute("BEGIN; LOCK TABLE ctgov.studies IN SHARE MODE"))
    try:
        command = [sys.executable, "-m", "services", "import", "aact", str(export), "--no-start-cache"]
        child = subprocess.Popen(command, cwd=PROJECT, env=dict(os.environ, DATABASE_URL=db.url),
                                 stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
        assert child.stderr is not None
        for line in child.stderr:  # wait until studies.txt is staged and facilities.txt is copying
            if "copied studies: 20,000" in line:
                break
        else:
            pytest.fail(f"the import ended before copying studies.txt (exit {child.wait()})")
        child.send_signal(sig)
    finally:
        run_sync(holder.close())  # the merge may go on now: it never commits, the import was interrupted
    assert child.wait(timeout=120) != 0
    assert db.fetch_value("SELECT count(*) FROM ctgov.studies") == before
    assert db.fetch_value("SELECT count(*) FROM ctgov.facilities WHERE nct_id LIKE 'NCT097%'") == 0
    # the importers' lock went with the dropped connection: the next import runs at once
    small = scratch_dir / "small.zip"
    with zipfile.ZipFile(small, "w") as zf:
        zf.writestr("studies.txt", f"nct_id|brief_title\nNCT{FIRST:08d}|x\n")
    done = subprocess.run([sys.executable, "-m", "services", "import", "aact", str(small), "--quiet",
                           "--no-start-cache"], cwd=PROJECT, env=dict(os.environ, DATABASE_URL=db.url),
                          capture_output=True, text=True, timeout=600)
    try:
        assert done.returncode == 0, done.stderr
        assert "1 new" in done.stdout
    finally:
        db.execute("DELETE FROM ctgov.studies WHERE nct_id = :n", {"n": f"NCT{FIRST:08d}"})


def test_import_stream_json_array_reads_like_json_lines(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonstream, "READ_AHEAD", 16)  # every item crosses several read-aheads
    title = 'a ] , [ " b'  # brackets, a comma and a quote inside a string
    studies = [{"protocolSection": {"identificationModule": {"nctId": f"NCT0970000{i}", "briefTitle": title}}}
               for i in range(5)]
    array = tmp_path / "studies.json"
    array.write_text("[\n" + ",\n".join(json.dumps(s, indent=2) for s in studies) + "\n]\n", encoding="utf-8")
    assert [s for _, _, s in read_studies(array)] == studies
    assert [i for _, i, _ in read_studies(array)] == [1, 2, 3, 4, 5]
    broken = tmp_path / "broken.json"
    truncated = json.dumps(studies[1])[:-3]
    broken.write_text("[\n" + json.dumps(studies[0]) + ",\n" + truncated + "\n", encoding="utf-8")
    with pytest.raises(BadInput, match=r"broken.json: line 4: not valid JSON \(Expecting"):
        list(read_studies(broken))
