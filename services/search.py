"""Trial search over the database: lists for widgets, matching trials, one trial's details."""

from __future__ import annotations

from services import runtime
from services.db import Database, load_sql


def country_names(db: Database | None = None) -> list[str]:
    """Countries that have studies, most studies first."""
    db = db or runtime.get_db()
    return [str(r["name"]) for r in db.fetch_rows(load_sql("country_names"))]
