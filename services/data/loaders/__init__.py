"""Importers: read a file completely, validate it, then replace its studies in one transaction."""

from __future__ import annotations

import itertools
import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.data import sitename
from services.data.db import Database, load_sql
from services.data.loaders import aact_flat, ctgov_csv, ctgov_json, sources
from services.data.loaders.coerce import FieldError
from services.data.loaders.common import COLUMNS, ID_TABLES, STUDY_TABLES, Batch
from services.errors import BadInput, QueryFailed

# Tables whose rows carry local ids (common.ID_TABLES) → the (table, column) pairs that point at them.
REFERENCES: dict[str, tuple[tuple[str, str], ...]] = {
    "interventions": (("intervention_other_names", "intervention_id"),
                      ("design_group_interventions", "intervention_id")),
    "design_groups": (("design_group_interventions", "design_group_id"),),
    "facilities": (("facility_contacts", "facility_id"), ("facility_investigators", "facility_id")),
    "outcomes": (("result_groups", "outcome_id"), ("outcome_measurements", "outcome_id"),
                 ("outcome_counts", "outcome_id"), ("outcome_analyses", "outcome_id")),
    "result_groups": tuple((t, "result_group_id") for t in (
        "baseline_counts", "baseline_measurements", "drop_withdrawals", "milestones", "reported_events",
        "outcome_measurements", "outcome_counts", "outcome_analysis_groups")),
    "outcome_analyses": (("outcome_analysis_groups", "outcome_analysis_id"),),
    "study_references": (("retractions", "reference_id"),),
}
assert set(REFERENCES) == ID_TABLES

# The text-search documents of every study (app.study_search, sql/schema/068_app_search.sql) for the relevance order.
REFRESH_SEARCH = ("TRUNCATE app.study_search;\nWITH m AS (SELECT nct_id FROM ctgov.studies), "
                  "terms AS (" + load_sql("search_terms") + "\n)\nINSERT INTO app.study_search "
                  "(nct_id, doc, condition_terms, mesh_terms, ancestor_terms, keyword_terms)\n"
                  "SELECT d.nct_id, d.doc, coalesce(terms.condition_terms, '{}'), coalesce(terms.mesh_terms, '{}'), "
                  "coalesce(terms.ancestor_terms, '{}'), coalesce(terms.keyword_terms, '{}') FROM (\n"
                  + load_sql("search_documents") + "\n) d LEFT JOIN terms ON terms.nct_id = d.nct_id"
                  + ";\nANALYZE app.study_search;\nINSERT INTO app.meta (key, value) VALUES ('search_refreshed_at', "
                  "now()::text) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now();")
# Run after every import, in the import's transaction: fresh planner statistics, the derived tables (study facets, site
# groups), the snapshot generation saved views compare against (services/dashboard/savedviews.py), pruned to what
# views still need, and the search documents.
AFTER_IMPORT: list[str] = [load_sql("analyze_ctgov"), load_sql("refresh_study_facets"), sitename.refresh_sql(),
                           load_sql("snapshot_studies"), load_sql("prune_snapshots"), REFRESH_SEARCH]


@dataclass(frozen=True)
class ImportReport:
    """What an import did: studies replaced and rows per table."""

    kind: str
    path: str
    studies: int
    rows: dict[str, int]
    seconds: float
    notes: tuple[str, ...] = ()
    skipped: tuple[dict[str, Any], ...] = ()  # one entry per study left out: file, line, nct_id, field, value

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path, "studies": self.studies, "rows": self.rows,
                "seconds": round(self.seconds, 2), "notes": list(self.notes), "skipped": list(self.skipped)}


@dataclass
class _Built:
    batch: Batch
    skipped: list[dict[str, Any]] = field(default_factory=list)


def _study_id(record: dict[str, Any]) -> str | None:
    nct = (((record.get("protocolSection") or {}).get("identificationModule") or {}).get("nctId")
           if isinstance(record.get("protocolSection"), dict) else record.get("NCT Number"))
    return nct if isinstance(nct, str) else None


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 120 else text[:119] + "…"


def _build(path: Path, records: Iterator[tuple[str, int, Any]],
           to_rows: Callable[[Any, Batch, dict[str, Iterator[int]]], str], *, strict: bool = False) -> _Built:
    """Map every record; a study with a value that fits no column is skipped and reported (refused if strict).

    Structural problems (not JSON, not a study object, no NCT id, a study twice) refuse the whole file.
    """
    built = _Built(Batch())
    batch = built.batch
    seen: dict[str, str] = {}
    ids: dict[str, Iterator[int]] = defaultdict(lambda: itertools.count(1))
    for source, line, record in records:
        where = f"{source}: line {line}"
        if not isinstance(record, dict):
            raise BadInput(f"{where}: expected a JSON object for one study.")
        mark = batch.mark()
        try:
            nct = to_rows(record, batch, ids)
        except FieldError as err:
            if strict:
                raise BadInput(f"{where}: {_study_id(record) or 'study'}: {err}.") from err
            batch.rollback(mark)
            built.skipped.append({"file": source, "line": line, "nct_id": _study_id(record), "field": err.field,
                                  "value": _shown(err.value), "reason": str(err)})
            continue
        except (ValueError, TypeError, KeyError, AttributeError) as err:
            raise BadInput(f"{where}: {err}.") from err
        if nct in seen:
            raise BadInput(f"{where}: duplicate study {nct} (also at {seen[nct]}); remove one and import again.")
        seen[nct] = where
    if not batch.nct_ids:
        why = f" ({len(built.skipped)} skipped: {built.skipped[0]['reason']})" if built.skipped else ""
        raise BadInput(f"{path}: no studies found in the file{why}.")
    return built


def _renumber(db: Database, batch: Batch) -> None:
    """Give rows of the referenced tables ids from the tables' sequences, and repoint the references."""
    for table, refs in REFERENCES.items():
        rows = batch.rows[table]
        fresh = db.reserve_ids(f"ctgov.{table}", len(rows))
        mapping = {row[0]: fresh[i] for i, row in enumerate(rows) if row[0] is not None}
        batch.rows[table] = [(fresh[i], *row[1:]) for i, row in enumerate(rows)]
        if not mapping:
            continue
        for ref_table, col in refs:
            idx = COLUMNS[ref_table].index(col)
            batch.rows[ref_table] = [row[:idx] + (mapping.get(row[idx], row[idx]),) + row[idx + 1:]
                                     for row in batch.rows[ref_table]]


# progress(phase, count): ("read", records read so far) while reading, then ("write", studies) before the
# write.
Progress = Callable[[str, int], None]


def _write(db: Database, kind: str, path: Path, built: _Built, started: float,
           provenance: list[tuple[Any, ...]], refresh: bool, progress: Progress | None) -> ImportReport:
    batch = built.batch
    if progress is not None:
        progress("write", len(batch.nct_ids))
    _renumber(db, batch)
    keys = {f"ctgov.{t}": batch.nct_ids for t in STUDY_TABLES}
    tables = {f"ctgov.{t}": (COLUMNS[t], batch.rows[t]) for t in STUDY_TABLES}
    keys[sources.TABLE] = batch.nct_ids
    kept = set(batch.nct_ids)  # a skipped study leaves no provenance row behind
    tables[sources.TABLE] = (sources.COLUMNS, [row for row in provenance if row[0] in kept])
    counts = db.replace_rows(keys, tables, after=AFTER_IMPORT if refresh else [])
    notes = [f"skipped {s['nct_id'] or 'a study'} ({s['file']}: line {s['line']}): {s['reason']}"
             for s in built.skipped]
    return _report(db, kind, path, len(batch.nct_ids), counts, started, notes, tuple(built.skipped))


def _report(db: Database, kind: str, path: Path, studies: int, counts: dict[str, int], started: float,
            notes: list[str], skipped: tuple[dict[str, Any], ...] = ()) -> ImportReport:
    """The import's report, with rows per ctgov table (not the provenance table), recorded in app.imports."""
    rows = {table.split(".", 1)[1]: n for table, n in counts.items() if table != sources.TABLE}
    seconds = time.perf_counter() - started
    report = ImportReport(kind, str(path), studies, rows, seconds, tuple(notes), skipped)
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


def import_ctgov_json(db: Database, path: Path, *, strict: bool = False, refresh: bool = True,
                      progress: Progress | None = None) -> ImportReport:
    """Import ClinicalTrials.gov API v2 studies (.json array, .jsonl, .jsonl.gz or .zip).

    A study with a value that fits no column is skipped and listed in the report; strict=True refuses the file.
    refresh=False skips the statistics and derived tables (a caller importing several files refreshes once).
    """
    started = time.perf_counter()
    built = _build(path, _counted(ctgov_json.read_studies(path), progress), ctgov_json.study_to_rows, strict=strict)
    provenance = [sources.source_row(nct, "ctgov-json", path.name, []) for nct in built.batch.nct_ids]
    return _write(db, "ctgov-json", path, built, started, provenance, refresh, progress)


def import_ctgov_csv(db: Database, path: Path, *, strict: bool = False, refresh: bool = True,
                     progress: Progress | None = None) -> ImportReport:
    """Import a ClinicalTrials.gov site CSV download (or the sample's CSV-as-JSON-lines)."""
    started = time.perf_counter()
    records = ((path.name, line, row) for line, row in ctgov_csv.read_rows(path))
    provenance: list[tuple[Any, ...]] = []

    def to_rows(row: dict[str, str], batch: Batch, ids: dict[str, Iterator[int]]) -> str:
        nct = ctgov_csv.row_to_rows(row, batch, ids)
        provenance.append(sources.source_row(nct, "ctgov-csv", row.get("_source") or path.name,
                                             sources.csv_lacks(row)))
        return nct

    built = _build(path, _counted(records, progress), to_rows, strict=strict)
    return _write(db, "ctgov-csv", path, built, started, provenance, refresh, progress)


# Referenced tables in an order where each one's own references are already renumbered.
_FLAT_ID_ORDER = ("interventions", "design_groups", "facilities", "outcomes", "study_references", "result_groups",
                  "outcome_analyses")
assert set(_FLAT_ID_ORDER) == ID_TABLES


def _renumber_flat(db: Database, tables: list[aact_flat.FlatTable]) -> None:
    """New ids for an export's rows from our sequences (never the export's own), references repointed."""
    ref_columns: dict[str, dict[str, str]] = defaultdict(dict)
    for target, refs in REFERENCES.items():
        for table, col in refs:
            ref_columns[table][col] = target
    by_name = {t.table: t for t in tables}
    references: dict[str, dict[str, int]] = {}
    for name in _FLAT_ID_ORDER:
        flat = by_name.get(name)
        if flat is not None:
            fresh = db.reserve_ids(f"ctgov.{name}", flat.rows) if "id" in flat.columns else []
            references[name] = flat.renumber(fresh, references, ref_columns[name])
    for flat in tables:
        if flat.table not in ID_TABLES:
            flat.without_id()
            flat.renumber([], references, ref_columns[flat.table])


def import_aact(db: Database, path: Path) -> ImportReport:
    """Import an AACT pipe-delimited flat-file export (zip or folder) with bulk COPY."""
    started = time.perf_counter()
    known: dict[str, list[str]] = {}
    for row in db.fetch_rows("SELECT c.table_name, c.column_name FROM information_schema.columns c "
                             "JOIN information_schema.tables t ON t.table_schema = c.table_schema "
                             "AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE' "
                             "WHERE c.table_schema = 'ctgov' ORDER BY c.table_name, c.ordinal_position"):
        known.setdefault(row["table_name"], []).append(row["column_name"])
    known = {t: cols for t, cols in known.items() if "nct_id" in cols}  # not the MeSH vocabulary tables
    nct_ids, tables, skipped = aact_flat.read_export(path, known)
    if not nct_ids:
        raise BadInput(f"{path}: studies.txt has no rows.")
    _renumber_flat(db, tables)
    keys = {f"ctgov.{t}": nct_ids for t in known}
    keys[sources.TABLE] = nct_ids  # an AACT export is a full record: no provenance row means nothing lacking
    csv_tables = {f"ctgov.{t.table}": (t.columns, t.csv_bytes()) for t in tables}
    try:
        counts = db.replace_rows(keys, {}, csv_tables=csv_tables, after=AFTER_IMPORT)
    except QueryFailed as err:
        raise aact_flat.copy_failure(path, tables, err) or err from err
    notes = [f"skipped {name} (a table we do not mirror)" for name in skipped]
    notes += [f"{t.table}: ignored columns {', '.join(t.dropped_columns)}" for t in tables if t.dropped_columns]
    notes += [f"{t.table}: left out {t.orphans} row{'s' if t.orphans != 1 else ''} of studies not in studies.txt"
              for t in tables if t.orphans]
    return _report(db, "aact", path, len(nct_ids), counts, started, notes)


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
    return _report(db, "criteria-fill", path, len(targets), counts, started, notes)
