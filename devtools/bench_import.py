"""`bench import`: a synthetic AACT export of N studies in AACT's flat-file format, imported by the real
`python -m services import aact` in a child process into an empty embedded server of its own; wall time, rows
per second and the child's peak resident memory (its VmHWM, sampled until it exits).

The export is written the way AACT's Util::TableExporter writes it (tests/test_aact_flat_roundtrip.py): one
`<table>.txt` per table in a zip, `|`-delimited CSV with a header, NULL as empty, booleans t/f, `"` deleted
and line breaks inside values as `~`, every table with AACT's `id` column. Studies come from devtools/synth.py
in chunks (NCT ids shifted per chunk), so the writer's own memory holds one chunk."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from devtools import synth

PROJECT_DIR = Path(__file__).resolve().parent.parent
CHUNK = 50_000  # studies generated at a time
TARGET_RSS_MB = 600


def _aact_table(df: pd.DataFrame, first_id: int) -> pd.DataFrame:
    """A synthetic table as AACT's exporter prints it: its own id column first, t/f, quotes deleted, `~` for
    line breaks."""
    out = df.copy()
    for col in out.columns:
        values = out[col]
        if values.dtype == bool:
            out[col] = np.where(values, "t", "f")
        elif values.dtype == object:
            out[col] = values.map(lambda v: v.replace('"', "").replace("\n", "~")
                                  if isinstance(v, str) else ("t" if v is True else "f" if v is False else v))
    out.insert(0, "id", np.arange(first_id, first_id + len(out)))
    return out


def _shift_ids(tables: dict[str, pd.DataFrame], offset: int) -> None:
    """synth.generate numbers every chunk's studies from NCT90000000: move this chunk's past the earlier ones.
    """
    for df in tables.values():
        number = df["nct_id"].str[3:].astype(np.int64) + offset
        df["nct_id"] = "NCT" + number.astype(str).str.zfill(8)


def write_export(path: Path, studies: int, seed: int) -> dict[str, int]:
    """Write the export zip; rows per table. Tables are written to plain files beside it, then deflated in."""
    work = path.with_suffix(".parts")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    rows: dict[str, int] = {}
    try:
        for k, start in enumerate(range(0, studies, CHUNK)):
            tables = synth.generate(min(CHUNK, studies - start), seed + k)
            _shift_ids(tables, start)
            for name, df in tables.items():
                table = _aact_table(df, rows.get(name, 0) + 1)
                with (work / f"{name}.txt").open("a", encoding="utf-8", newline="") as fh:
                    table.to_csv(fh, sep="|", index=False, header=name not in rows, na_rep="",
                                 quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
                rows[name] = rows.get(name, 0) + len(table)
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
            for name in rows:
                zf.write(work / f"{name}.txt", f"{name}.txt")
                (work / f"{name}.txt").unlink()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows


def _peak_kb(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM, kB; 0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            return next((int(line.split()[1]) for line in fh if line.startswith("VmHWM:")), 0)
    except OSError:
        return 0


def _import(url: str, export: Path) -> tuple[dict[str, Any], float, float]:
    """Run the import command in a child process: (its JSON report, seconds, peak RSS in MB).

    The peak is the child's own VmHWM, read every 0.1 s until it exits: wait4's ru_maxrss would also count the
    pages a forked child shares with this process (the export writer's frames) before it executes the command.
    """
    env = {**os.environ, "DATABASE_URL": url}
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen([sys.executable, "-m", "services", "import", "aact", str(export), "--json",
                                  "--no-start-cache"], cwd=PROJECT_DIR, env=env, stdout=out)
        peak = 0
        while child.poll() is None:
            peak = max(peak, _peak_kb(child.pid))
            time.sleep(0.1)
        seconds = time.perf_counter() - started
        out.seek(0)
        text = out.read().decode(errors="replace")
    if child.returncode != 0:
        raise RuntimeError(f"the import exited with {child.returncode}: {text[-2000:]}")
    return json.loads(text), seconds, peak / 1024


def run(studies: int, seed: int, *, export: Path | None = None, keep: bool = False) -> dict[str, Any]:
    """Write (or reuse) the export, import it into a fresh embedded server, measure, clean up."""
    from services.data import embedded, runtime
    from services.data.db import Database

    base = embedded.data_dir() / "bench-import"
    base.mkdir(parents=True, exist_ok=True)
    written = export is None
    export = export or base / f"{time.strftime('%Y%m%d')}_pipe-delimited-export.zip"
    write_s = 0.0
    if written:
        started = time.perf_counter()
        write_export(export, studies, seed)
        write_s = time.perf_counter() - started
    pgdata = base / "pg"
    shutil.rmtree(pgdata, ignore_errors=True)
    try:
        db = Database(embedded.start(pgdata), label="bench-import")
        runtime.apply_schema(db)
        report, seconds, peak_mb = _import(db.url, export)
        size = int(db.fetch_value("SELECT pg_database_size(current_database())") or 0)
        db.close()
    finally:
        embedded.stop(pgdata)
        if not keep:
            shutil.rmtree(pgdata, ignore_errors=True)
            if written:
                export.unlink(missing_ok=True)
    rows = sum(report["rows"].values())
    return {"studies": report["studies"], "rows": rows, "rows_by_table": report["rows"],
            "export_mb": round(export.stat().st_size / 1024**2, 1) if export.exists() else None,
            "write_export_s": round(write_s, 1), "import_s": round(seconds, 1),
            "rows_per_s": round(rows / seconds), "studies_per_s": round(report["studies"] / seconds),
            "peak_rss_mb": round(peak_mb, 1), "database_mb": round(size / 1024**2),
            "target_rss_mb": TARGET_RSS_MB,
            "ok": peak_mb <= TARGET_RSS_MB}


def table(r: dict[str, Any]) -> str:
    """The result as text."""
    return (f"imported {r['studies']:,} synthetic studies ({r['rows']:,} rows) in {r['import_s']} s: "
            f"{r['rows_per_s']:,} rows/s, {r['studies_per_s']:,} studies/s\n"
            f"peak RSS of the import process {r['peak_rss_mb']} MB (target ≤ {r['target_rss_mb']} MB: "
            f"{'ok' if r['ok'] else 'OVER'}); database {r['database_mb']:,} MB; export written in "
            f"{r['write_export_s']} s")
