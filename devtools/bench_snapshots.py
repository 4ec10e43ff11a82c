"""`bench snapshot`: what the saved views' snapshot adds to an import, at the database's scale.

Runs the work every import does after writing its rows — planner statistics, the derived tables, then the snapshot
generation and its pruning (sql/queries/snapshot_studies.sql, prune_snapshots.sql) — and times each step. An import
runs them in its own transaction; here each step commits on its own so it can be timed. It changes no trial data:
change some on a copy first (or import a file) to time a snapshot with changes in it.
"""

from __future__ import annotations

import time
from typing import Any

STEPS = ("analyze_ctgov", "refresh_study_facets", "snapshot_studies", "prune_snapshots")


def bench_snapshot(db: Any) -> dict[str, Any]:
    """Time each after-import step once; report the new generation, the versions it added and the storage."""
    from services.data.db import load_sql

    before = int(db.fetch_value("SELECT count(*) FROM app.study_versions"))
    seconds: dict[str, float] = {}
    for step in STEPS:
        started = time.perf_counter()
        db.execute_script(load_sql(step), timeout_ms=3_600_000)
        seconds[step] = round(time.perf_counter() - started, 2)
    row = db.fetch_rows(
        "SELECT (SELECT max(generation) FROM app.snapshot_generations) AS generation, "
        "(SELECT count(*) FROM app.snapshot_generations) AS generations_kept, "
        "(SELECT count(*) FROM app.study_versions) AS versions, "
        "(SELECT count(*) FROM app.study_versions WHERE valid_from = "
        " (SELECT max(generation) FROM app.snapshot_generations)) AS versions_added, "
        "pg_total_relation_size('app.study_versions') AS bytes, (SELECT count(*) FROM ctgov.studies) AS studies")[0]
    return {"benchmark": "snapshot", "database": db.label, "seconds": seconds, "versions_before": before,
            **{k: int(v) for k, v in row.items()}}


def snapshot_text(result: dict[str, Any]) -> str:
    """The result for a person."""
    steps = ", ".join(f"{k} {v:.2f} s" for k, v in result["seconds"].items())
    return (f"snapshot benchmark on {result['database']} ({result['studies']:,} studies): {steps}\n"
            f"generation {result['generation']} added {result['versions_added']:,} versions; "
            f"{result['versions']:,} versions kept in {result['generations_kept']} generations, "
            f"{result['bytes'] / 1e6:.0f} MB with indexes")
