"""Importers: read a file completely, validate it, then replace its studies in one transaction."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.db import Database, load_sql
from services.errors import BadInput
from services.loaders import aact_flat, ctgov_csv, ctgov_json
from services.loaders.common import COLUMNS, STUDY_TABLES, Batch

# Run after every import, in the import's transaction: fresh planner statistics, then the derived tables.
AFTER_IMPORT: list[str] = [load_sql("analyze_ctgov"), load_sql("refresh_study_facets")]


@dataclass(frozen=True)
class ImportReport:
    """What an import did: studies replaced and rows per table."""

    kind: str
    path: str
    studies: int
    rows: dict[str, int]
    seconds: float
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path, "studies": self.studies, "rows": self.rows,
                "seconds": round(self.seconds, 2), "notes": list(self.notes)}


def _counter() -> Iterator[int]:
    n = 0
    while True:
        n += 1
        yield n


def _build(path: Path, records: Iterator[tuple[str, int, Any]],
           to_rows: Callable[[Any, Batch, dict[str, Iterator[int]]], str]) -> Batch:
    batch = Batch()
    seen: dict[str, str] = {}
    ids = {"interventions": _counter(), "design_groups": _counter()}
    for source, line, record in records:
        where = f"{source}: line {line}"
        if not isinstance(record, dict):
            raise BadInput(f"{where}: expected a JSON object for one study.")
        try:
            nct = to_rows(record, batch, ids)
        except (ValueError, TypeError, KeyError, AttributeError) as err:
            raise BadInput(f"{where}: {err}.") from err
        if nct in seen:
            raise BadInput(f"{where}: duplicate study {nct} (also at {seen[nct]}); remove one and import again.")
        seen[nct] = where
    if not batch.nct_ids:
        raise BadInput(f"{path}: no studies found in the file.")
    return batch


def _renumber(db: Database, batch: Batch) -> None:
    """Swap the batch's local ids (1…n) for ids taken from the tables' sequences."""
    for table, refs in (("interventions", (("intervention_other_names", "intervention_id"),
                                            ("design_group_interventions", "intervention_id"))),
                        ("design_groups", (("design_group_interventions", "design_group_id"),))):
        rows = batch.rows[table]
        fresh = db.reserve_ids(f"ctgov.{table}", len(rows))
        mapping = {row[0]: fresh[i] for i, row in enumerate(rows)}
        batch.rows[table] = [(mapping[row[0]], *row[1:]) for row in rows]
        for ref_table, col in refs:
            idx = COLUMNS[ref_table].index(col)
            batch.rows[ref_table] = [tuple(mapping.get(v, v) if i == idx else v for i, v in enumerate(row))
                                     for row in batch.rows[ref_table]]


def _write(db: Database, kind: str, path: Path, batch: Batch, started: float) -> ImportReport:
    _renumber(db, batch)
    keys = {f"ctgov.{t}": batch.nct_ids for t in STUDY_TABLES}
    tables = {f"ctgov.{t}": (COLUMNS[t], batch.rows[t]) for t in STUDY_TABLES}
    counts = db.replace_rows(keys, tables, after=AFTER_IMPORT)
    report = ImportReport(kind, str(path), len(batch.nct_ids), {k.split(".", 1)[1]: v for k, v in counts.items()},
                          time.perf_counter() - started)
    _record(db, report)
    return report


def _record(db: Database, report: ImportReport) -> None:
    db.execute("INSERT INTO app.imports (source_kind, source_path, studies, row_counts, seconds) "
               "VALUES (:k, :p, :n, CAST(:c AS jsonb), :s)",
               {"k": report.kind, "p": report.path, "n": report.studies, "c": json.dumps(report.rows),
                "s": report.seconds})


def import_ctgov_json(db: Database, path: Path) -> ImportReport:
    """Import ClinicalTrials.gov API v2 studies (.json array, .jsonl, .jsonl.gz or .zip)."""
    started = time.perf_counter()
    batch = _build(path, ctgov_json.read_studies(path), ctgov_json.study_to_rows)
    return _write(db, "ctgov-json", path, batch, started)


def import_ctgov_csv(db: Database, path: Path) -> ImportReport:
    """Import a ClinicalTrials.gov site CSV download (or the sample's CSV-as-JSON-lines)."""
    started = time.perf_counter()
    records = ((path.name, line, row) for line, row in ctgov_csv.read_rows(path))
    batch = _build(path, records, ctgov_csv.row_to_rows)
    return _write(db, "ctgov-csv", path, batch, started)


def import_aact(db: Database, path: Path) -> ImportReport:
    """Import an AACT pipe-delimited flat-file export (zip or folder) with bulk COPY."""
    started = time.perf_counter()
    known: dict[str, list[str]] = {}
    for row in db.fetch_rows("SELECT table_name, column_name FROM information_schema.columns "
                             "WHERE table_schema = 'ctgov' ORDER BY table_name, ordinal_position"):
        known.setdefault(row["table_name"], []).append(row["column_name"])
    nct_ids, tables, skipped = aact_flat.read_export(path, known)
    if not nct_ids:
        raise BadInput(f"{path}: studies.txt has no rows.")
    keys = {f"ctgov.{t}": nct_ids for t in known}
    csv_tables = {f"ctgov.{t.table}": (t.columns, t.data) for t in tables}
    bump = [f"SELECT setval(pg_get_serial_sequence('ctgov.{t.table}', 'id'), "
            f"GREATEST((SELECT max(id) FROM ctgov.{t.table}), 1))" for t in tables if "id" in t.columns]
    counts = db.replace_rows(keys, {}, csv_tables=csv_tables, after=[*bump, *AFTER_IMPORT])
    notes = [f"skipped {name} (a table we do not mirror)" for name in skipped]
    notes += [f"{t.table}: ignored columns {', '.join(t.dropped_columns)}" for t in tables if t.dropped_columns]
    report = ImportReport("aact", str(path), len(nct_ids), {k.split(".", 1)[1]: v for k, v in counts.items()},
                          time.perf_counter() - started, tuple(notes))
    _record(db, report)
    return report
