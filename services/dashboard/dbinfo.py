"""What is in the connected trial database: row counts, sites with coordinates, freshness."""

from __future__ import annotations

from typing import Any

from services.dashboard import stats
from services.data import provenance, runtime
from services.data.db import Database, load_sql


def database_info(db: Database | None = None) -> dict[str, Any]:
    """`db info`: database (never a password), studies, sites with coordinates, freshness, tables."""
    db = db or runtime.get_db()
    results = db.fetch_many({
        "summary": (load_sql("db_summary"), None),
        "tables": (load_sql("db_table_counts"), None),
    })
    summary = results["summary"]
    tables = results["tables"]
    if isinstance(summary, Exception):
        raise summary
    if isinstance(tables, Exception):
        raise tables
    row = summary.iloc[0]
    freshness = row["freshness"]
    src = runtime.source() if db is runtime.get_db() else runtime.Source("external", db.label, db.read_only)
    records = provenance.record_counts(db)
    return {
        "database": src.description,
        "kind": src.kind,
        "read_only": src.read_only,
        "server_version": db.health().server_version,  # PostgreSQL's own version string, e.g. "18.1"
        "studies": int(row["studies"]),
        "sites": int(row["sites"]),
        "sites_with_coordinates": int(row["sites_with_coordinates"]),
        # full: the source carried every field (API v2, AACT); partial: e.g. a site CSV download
        "full_records": records.full,
        "partial_records": records.partial,
        "partial_with_criteria_added": records.criteria_added,
        "records_tracked": records.tracked,
        "freshness": freshness.isoformat() if freshness is not None and hasattr(freshness, "isoformat") else None,
        "tables": {str(r.table_name): int(r.row_count) for r in tables.itertuples()},
        "engine": stats.engine(db),
    }


def freshness(db: Database | None = None) -> str | None:
    """Newest last-update-posted date in the data (ISO), or None when empty."""
    db = db or runtime.get_db()
    value = db.fetch_value("SELECT max(last_update_posted_date) FROM ctgov.studies")
    return value.isoformat() if value is not None else None
