"""The trials matching reads, through the one database door (sql/queries/matching_trials.sql)."""

from __future__ import annotations

from collections.abc import Sequence

from services.data.db import Database, load_sql
from services.matching.judge import TrialCase


def trial_cases(db: Database, nct_ids: Sequence[str]) -> dict[str, TrialCase]:
    """The given trials that are in the database, by NCT id."""
    if not nct_ids:
        return {}
    rows = db.fetch_rows(load_sql("matching_trials"), {"ids": list(dict.fromkeys(nct_ids))})
    return {str(r["nct_id"]): TrialCase.from_row(r) for r in rows}
