"""AACT's own material (github.com/ctti-clinicaltrials/aact, MIT; copied to ../shared/data/aact/): the v2 study
fixtures its RSpec specs load and the rows those specs expect; helpers to load fixtures under test NCT ids."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from services.data.db import load_sql
from services.data.loaders import REFRESH_SEARCH, import_ctgov_json
from services.data.loaders.aact_schema import TABLES

PROJECT = Path(__file__).resolve().parent.parent
AACT_DIR = Path(os.environ.get("AACT_FIXTURES_DIR", PROJECT.parent / "shared" / "data" / "aact"))
FIXTURES = AACT_DIR / "fixtures"
EXPECTED = AACT_DIR / "expected"


def available() -> bool:
    return (EXPECTED / "spec_expectations.json").exists()


def fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def with_nct(study: dict[str, Any], nct: str) -> dict[str, Any]:
    """The study under another NCT id (AACT's specs use ids like NCT000001 our loader refuses)."""
    study = json.loads(json.dumps(study))
    study.setdefault("protocolSection", {}).setdefault("identificationModule", {})["nctId"] = nct
    return study


def load(db: Any, studies: list[dict[str, Any]], path: Path) -> None:
    path.write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in studies), encoding="utf-8")
    report = import_ctgov_json(db, path, strict=True)
    assert report.studies == len(studies)


def remove(db: Any, nct_ids: list[str]) -> None:
    """Delete test studies from every table and rebuild the derived tables (and the search documents, which hold
    the rebuilt dictionary's term ids)."""
    for table in TABLES:
        db.execute(f"DELETE FROM ctgov.{table} WHERE nct_id = ANY(:ids)", {"ids": nct_ids})
    db.execute_script(load_sql("refresh_study_facets") + "\n" + REFRESH_SEARCH)
