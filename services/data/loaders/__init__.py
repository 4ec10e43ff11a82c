"""Importers: stream a file into staging tables in batches, then merge its studies into ctgov (merge.py), all
in one transaction (bulk.py): memory holds one batch, the database sees the whole import or nothing."""

from __future__ import annotations

import itertools
import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.data import sitename
from services.data.db import Database, load_sql
from services.data.loaders import aact_flat, bulk, ctgov_csv, ctgov_json, merge, sources
from services.data.loaders.coerce import FieldError
from services.data.loaders.common import COLUMNS, ID_TABLES, REFERENCES, STUDY_TABLES, Batch

__all__ = ["REFERENCES"]  # re-exported: tests and tools import it from here
from services.errors import BadInput, QueryFailed

# The text-search documents of every study (app.study_search, sql/schema/068_app_search.sql) for the relevance
# order.
REFRESH_SEARCH = ("TRUNCATE app.study_search;\nWITH m AS (SELECT nct_id FROM ctgov.studies), "
                  "terms AS (" + load_sql("search_terms") + "\n)\nINSERT INTO app.study_search "
                  "(nct_id, doc, condition_terms, mesh_terms, ancestor_terms, keyword_terms)\n"
                  "SELECT d.nct_id, d.doc, coalesce(terms.condition_terms, '{}'), coalesce(terms.mesh_terms, '{}'), "
                  "coalesce(terms.ancestor_terms, '{}'), coalesce(terms.keyword_terms, '{}') FROM (\n"
                  + load_sql("search_documents") + "\n) d LEFT JOIN terms ON terms.nct_id = d.nct_id"
                  + ";\nANALYZE app.study_search;\nINSERT INTO app.meta (key, value) VALUES ('search_refreshed_at', "
                  "now()::text) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now();")
# Run after every import, in the import's transaction: fresh planner statistics, the derived tables (study
# facets, site groups), the snapshot generation saved views compare against
# (services/dashboard/savedviews.py), pruned to what views still need, and the search documents.
AFTER_IMPORT: list[str] = [load_sql("analyze_ctgov"), load_sql("refresh_study_facets"), sitename.refresh_sql(),
                           load_sql("snapshot_studies"), load_sql("prune_snapshots"), REFRESH_SEARCH]


@dataclass(frozen=True)
class ImportReport:
    """What an import did: studies read, rows per table, and per study new / replaced / enriched / kept."""

    kind: str
    path: str
    studies: int
    rows: dict[str, int]
    seconds: float
    notes: tuple[str, ...] = ()
    skipped: tuple[dict[str, Any], ...] = ()  # one entry per study left out: file, line, nct_id, field, value
    outcome: merge.Outcome | None = None

    def as_dict(self) -> dict[str, Any]:
        out = {"kind": self.kind, "path": self.path, "studies": self.studies, "rows": self.rows,
               "seconds": round(self.seconds, 2), "notes": list(self.notes), "skipped": list(self.skipped)}
        if self.outcome is not None:
            out["outcome"] = {"counts": self.outcome.counts, "studies": list(self.outcome.studies),
                              "lines": merge.describe(self.outcome)}
        return out


BATCH_STUDIES = 2_000  # studies mapped in memory at a time before their rows go to the staging tables


def _study_id(record: dict[str, Any]) -> str | None:
    nct = (((record.get("protocolSection") or {}).get("identificationModule") or {}).get("nctId")
           if isinstance(record.get("protocolSection"), dict) else record.get("NCT Number"))
    return nct if isinstance(nct, str) else None


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 120 else text[:119] + "…"


# progress(phase, count): ("read", records read so far) while reading, then ("write", studies) before the
# merge; the AACT import reports ("copied <table>", rows), ("merged <table>", rows) and the refresh's steps.
Progress = Callable[[str, int], None]
# A record → its rows in the batch (returns the NCT id) and its provenance row.
ToRows = Callable[[Any, Batch, dict[str, Iterator[int]]], str]
SourceOf = Callable[[Any, str], tuple[Any, ...]]


class _Stream:
    """Records mapped in batches and copied into the staging tables of one import session."""

    def __init__(self, session: bulk.Session, to_rows: ToRows, source_of: SourceOf, strict: bool) -> None:
        self.session, self.to_rows, self.source_of, self.strict = session, to_rows, source_of, strict
        self.batch = Batch()
        self.sources: list[tuple[Any, ...]] = []
        self.skipped: list[dict[str, Any]] = []
        self.seen: dict[str, str] = {}  # NCT id → where (a study twice refuses the file)
        self.ids: dict[str, Iterator[int]] = defaultdict(lambda: itertools.count(1))  # local ids, whole file

    def add(self, source: str, line: int, record: Any) -> None:
        """Map one record; a value that fits no column skips the study (refuses the file if strict)."""
        where = f"{source}: line {line}"
        if not isinstance(record, dict):
            raise BadInput(f"{where}: expected a JSON object for one study.")
        mark = self.batch.mark()
        try:
            nct = self.to_rows(record, self.batch, self.ids)
        except FieldError as err:
            if self.strict:
                raise BadInput(f"{where}: {_study_id(record) or 'study'}: {err}.") from err
            self.batch.rollback(mark)
            self.skipped.append({"file": source, "line": line, "nct_id": _study_id(record),
                                 "field": err.field,
                                 "value": _shown(err.value), "reason": str(err)})
            return
        except (ValueError, TypeError, KeyError, AttributeError) as err:
            raise BadInput(f"{where}: {err}.") from err
        if nct in self.seen:
            raise BadInput(f"{where}: duplicate study {nct} (also at {self.seen[nct]}); remove one and "
                           "import again.")
        self.seen[nct] = where
        self.sources.append(self.source_of(record, nct))
        if len(self.batch.nct_ids) >= BATCH_STUDIES:
            self.flush()

    def flush(self) -> None:
        """Copy the batch's rows into the staging tables and start an empty batch."""
        for table, rows in self.batch.rows.items():
            self.session.copy_records("pg_temp", f"_s_{table}", COLUMNS[table], rows)
        self.session.copy_records("pg_temp", "_s_sources", sources.COLUMNS, self.sources)
        self.batch, self.sources = Batch(), []


def _import_records(db: Database, kind: str, path: Path, records: Iterator[tuple[str, int, Any]],
                    to_rows: ToRows, source_of: SourceOf, *, strict: bool, replace: bool, refresh: bool,
                    progress: Progress | None) -> ImportReport:
    """Map records in batches into staging tables, then merge them into ctgov, in one transaction.

    Structural problems (not JSON, not a study object, no NCT id, a study twice) refuse the whole file.
    """
    started = time.perf_counter()
    with bulk.session(db) as session:
        lay = merge.layout(session)
        merge.begin(session)
        for table in STUDY_TABLES:
            name = merge.create_stage(session, table, lay)
            session.execute(f"CREATE INDEX ON {name} (nct_id)" + (f";\nCREATE INDEX ON {name} (id)"
                                                                  if table in ID_TABLES else ""))
        stream = _Stream(session, to_rows, source_of, strict)
        for source, line, record in _counted(records, progress):
            stream.add(source, line, record)
        stream.flush()
        if not stream.seen:
            why = f" ({len(stream.skipped)} skipped: {stream.skipped[0]['reason']})" if stream.skipped else ""
            raise BadInput(f"{path}: no studies found in the file{why}.")
        if progress is not None:
            progress("write", len(stream.seen))
        session.execute("ANALYZE " + ", ".join(f'"_s_{t}"' for t in STUDY_TABLES))
        outcome = merge.merge(session, {t: list(COLUMNS[t]) for t in STUDY_TABLES}, replace=replace)
        _refresh(session, refresh, None)
    notes = [f"skipped {s['nct_id'] or 'a study'} ({s['file']}: line {s['line']}): {s['reason']}"
             for s in stream.skipped]
    return _report(db, kind, path, len(stream.seen), outcome.rows, started, notes, tuple(stream.skipped),
                   outcome)


def _report(db: Database, kind: str, path: Path, studies: int, rows: dict[str, int], started: float,
            notes: list[str], skipped: tuple[dict[str, Any], ...] = (),
            outcome: merge.Outcome | None = None) -> ImportReport:
    """The import's report, with rows per ctgov table, recorded in app.imports."""
    seconds = time.perf_counter() - started
    report = ImportReport(kind, str(path), studies, rows, seconds, tuple(notes), skipped, outcome)
    db.execute("INSERT INTO app.imports (source_kind, source_path, studies, row_counts, seconds) "
               "VALUES (:k, :p, :n, CAST(:c AS jsonb), :s)",
               {"k": report.kind, "p": report.path, "n": report.studies, "c": json.dumps(report.rows),
                "s": report.seconds})
    return report


def _counted(records: Iterator[tuple[str, int, Any]],
             progress: Progress | None) -> Iterator[tuple[str, int, Any]]:
    n = 0
    for record in records:
        yield record
        n += 1
        if progress is not None and n % 100 == 0:
            progress("read", n)
    if progress is not None:
        progress("read", n)


def import_ctgov_json(db: Database, path: Path, *, strict: bool = False, replace: bool = False,
                      refresh: bool = True, progress: Progress | None = None) -> ImportReport:
    """Import ClinicalTrials.gov API v2 studies (.json array, .jsonl, .jsonl.gz or .zip).

    A study with a value that fits no column is skipped and listed in the report; strict=True refuses the
    file. A study already held is replaced only by a record at least as new (merge.py); replace=True always
    replaces. refresh=False skips the statistics and derived tables (a caller importing several files
    refreshes once)."""
    def source_of(record: Any, nct: str) -> tuple[Any, ...]:
        return sources.source_row(nct, "ctgov-json", path.name, [])

    return _import_records(db, "ctgov-json", path, ctgov_json.read_studies(path), ctgov_json.study_to_rows,
                           source_of, strict=strict, replace=replace, refresh=refresh, progress=progress)


def import_ctgov_csv(db: Database, path: Path, *, strict: bool = False, replace: bool = False,
                     refresh: bool = True, progress: Progress | None = None) -> ImportReport:
    """Import a ClinicalTrials.gov site CSV download (or the sample's CSV-as-JSON-lines).

    A CSV row is a partial record: over a full record of ours it only adds tables ours has no rows in.
    """
    def source_of(row: dict[str, str], nct: str) -> tuple[Any, ...]:
        return sources.source_row(nct, "ctgov-csv", row.get("_source") or path.name, sources.csv_lacks(row))

    records = ((path.name, line, row) for line, row in ctgov_csv.read_rows(path))
    return _import_records(db, "ctgov-csv", path, records, ctgov_csv.row_to_rows, source_of, strict=strict,
                           replace=replace, refresh=refresh, progress=progress)


def import_aact(db: Database, path: Path, *, replace: bool = False, refresh: bool = True,
                progress: Progress | None = None) -> ImportReport:
    """Import an AACT pipe-delimited flat-file export (zip or folder): each member streams by COPY into a
    staging table, then merges into ctgov (services/data/loaders/merge.py), all in one transaction.

    replace=True takes the export's record of each study whatever the dates (still only the tables it
    carries)."""
    started = time.perf_counter()
    notes: list[str] = []
    try:
        with aact_flat.members(path) as members, bulk.session(db) as session:
            if "studies" not in members:
                raise BadInput(f"{path}: no studies.txt inside; an AACT export always has one.")
            lay = merge.layout(session)
            merge.begin(session)
            staged: dict[str, aact_flat.Staged] = {}
            for table in ["studies", *(t for t in members if t != "studies")]:
                where, opener = members[table]
                if table not in lay.types:
                    notes.append(f"skipped {where} (a table we do not mirror)")
                    continue
                staged[table] = aact_flat.stage(session, path, table, opener(), lay)
                studies = staged.get("studies") if table != "studies" else None
                aact_flat.check(session, path, staged[table], studies)
                if progress is not None:
                    progress(f"copied {table}", staged[table].rows)
            if not staged["studies"].rows:
                raise BadInput(f"{path}: studies.txt has no rows.")
            outcome = merge.merge(session, {t: s.columns for t, s in staged.items()}, replace=replace,
                                  progress=progress)
            _refresh(session, refresh, progress)
    except QueryFailed as err:
        raise aact_flat.copy_failure(path, err) or err from err
    notes += [f"{t.table}: ignored columns {', '.join(t.dropped_columns)}" for t in staged.values()
              if t.dropped_columns]
    notes += [f"{t.table}: left out {t.orphans} row{'s' if t.orphans != 1 else ''} of studies not in studies.txt"
              for t in staged.values() if t.orphans]
    return _report(db, "aact", path, staged["studies"].rows, outcome.rows, started, notes, (), outcome)


def _refresh(session: bulk.Session, refresh: bool, progress: Progress | None) -> None:
    """The statistics and derived tables, in the import's transaction (skipped when a caller refreshes once).
    """
    if not refresh:
        return
    for step, stmt in enumerate(AFTER_IMPORT, start=1):
        if progress is not None:
            progress("refreshing derived tables, step", step)
        session.execute(stmt)


def import_criteria_fill(db: Database, path: Path, *, refresh: bool = True) -> ImportReport:
    """Attach criteria text from another source to partial (CSV-derived) records, naming source and date.

    Studies whose record is already full (or that are not in the database) are left alone and counted in
    the notes; re-running replaces the text, never duplicates it.
    """
    started = time.perf_counter()
    fills: dict[str, sources.Fill] = {}
    for line, fill in sources.read_fills(path):
        if fill.nct_id in fills:
            raise BadInput(f"{path}: line {line}: duplicate study {fill.nct_id}; remove one and import again.")
        fills[fill.nct_id] = fill
    if not fills:
        raise BadInput(f"{path}: no rows found in the file.")
    ids = list(fills)
    current = {str(r["nct_id"]): r for r in db.fetch_rows(load_sql("criteria_fill_sources"), {"ids": ids})}
    targets = [n for n in ids if n in current and current[n]["source_kind"] == "ctgov-csv"]
    elig_columns = [str(r["column_name"]) for r in db.fetch_rows(load_sql("criteria_fill_eligibility_columns"))]
    existing = {str(r["nct_id"]): r for r in db.fetch_rows(load_sql("criteria_fill_eligibilities"),
                                                                {"ids": targets})}
    elig_rows, summary_rows, source_rows = [], [], []
    for nct in targets:
        fill, src = fills[nct], current[nct]
        row = dict(existing.get(nct) or {"nct_id": nct})
        row["criteria"] = fill.criteria
        elig_rows.append(tuple(row.get(c) for c in elig_columns))
        lacks = set(src["lacks"] or ()) - {"criteria"}
        if fill.summary and not src["has_summary"]:
            summary_rows.append((nct, fill.summary))
            lacks.discard("summary")
        source_rows.append((nct, src["source_kind"], src["source_name"], sorted(lacks), fill.source,
                            fill.criteria_format, fill.as_of))
    summary_ids = [r[0] for r in summary_rows]
    counts = db.replace_rows(
        {"ctgov.eligibilities": targets, "ctgov.brief_summaries": summary_ids, sources.TABLE: targets},
        {"ctgov.eligibilities": (elig_columns, elig_rows),
         "ctgov.brief_summaries": (COLUMNS["brief_summaries"], summary_rows),
         sources.TABLE: (sources.COLUMNS, source_rows)},
        after=AFTER_IMPORT if refresh else [])
    notes = []
    chosen = set(targets)
    if skipped_full := sum(1 for n in ids if n in current and n not in chosen):
        notes.append(f"{skipped_full} studies left alone: our copy is already a full record")
    if absent := sum(1 for n in ids if n not in current):
        notes.append(f"{absent} studies left alone: not in the database")
    rows = {table.split(".", 1)[1]: n for table, n in counts.items() if table != sources.TABLE}
    return _report(db, "criteria-fill", path, len(targets), rows, started, notes)
