"""Imports never lose data silently: an older record, a 3-column CSV row and a studies.txt-only AACT export
over a full record change nothing but what they newly carry, and the report says so per study; --replace does
replace; two members for one table in a zip are refused naming both (services/data/loaders/merge.py)."""

from __future__ import annotations

import copy
import gzip
import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from services.data.db import load_sql
from services.data.loaders import REFRESH_SEARCH, import_aact, import_ctgov_csv, import_ctgov_json
from services.data.loaders.common import STUDY_TABLES
from services.errors import BadInput

PROJECT = Path(__file__).resolve().parent.parent
SOURCE_NCT = "NCT00273416"  # a sample study with criteria, 2 sites, conditions and no keywords
NCT = "NCT09999971"


def _source_record() -> dict[str, Any]:
    with gzip.open(PROJECT / "data" / "ctgov_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            if f'"{SOURCE_NCT}"' in line:
                study = json.loads(line)
                study["protocolSection"]["identificationModule"]["nctId"] = NCT
                return study
    raise AssertionError(f"{SOURCE_NCT} is not in the sample")


def _snapshot(db: Any) -> dict[str, list[dict[str, Any]]]:
    """Every row of the test study in every ctgov table, and its provenance row (ids included: kept rows keep
    them)."""
    out = {t: db.fetch_rows(f"SELECT * FROM ctgov.{t} WHERE nct_id = :n ORDER BY 1", {"n": NCT})
           for t in STUDY_TABLES}
    out["sources"] = db.fetch_rows("SELECT * FROM app.study_sources WHERE nct_id = :n", {"n": NCT})
    return {t: [{k: v for k, v in r.items() if k not in ("created_at", "updated_at")} for r in rows]
            for t, rows in out.items()}


def _write_jsonl(path: Path, study: dict[str, Any]) -> Path:
    path.write_text(json.dumps(study) + "\n", encoding="utf-8")
    return path


def _listed(report: Any) -> dict[str, Any]:
    return next(s for s in report.outcome.studies if s["nct_id"] == NCT)


@pytest.fixture()
def full_record(db: Any, scratch_dir: Path) -> Iterator[dict[str, Any]]:
    """The test study loaded as a full API v2 record (no derived-table refresh: nothing else sees it)."""
    study = _source_record()
    report = import_ctgov_json(db, _write_jsonl(scratch_dir / "full.jsonl", study), refresh=False)
    assert _listed(report)["action"] == "new"
    yield study
    _remove(db)


def _remove(db: Any) -> None:
    for table in STUDY_TABLES:
        db.execute(f"DELETE FROM ctgov.{table} WHERE nct_id = :n", {"n": NCT})
    db.execute("DELETE FROM app.study_sources WHERE nct_id = :n", {"n": NCT})


def _older(study: dict[str, Any], *, keywords: list[str] | None = None) -> dict[str, Any]:
    """The record as it stood in 2001: no eligibility, no locations, another title (and keywords if given)."""
    old = copy.deepcopy(study)
    ps = old["protocolSection"]
    ps["statusModule"]["lastUpdatePostDateStruct"] = {"date": "2001-03-01", "type": "ACTUAL"}
    ps.pop("eligibilityModule")
    ps.pop("contactsLocationsModule")
    ps["identificationModule"]["briefTitle"] = "An old title"
    if keywords:
        ps["conditionsModule"]["keywords"] = keywords
    return old


def test_import_merge_older_json_record_changes_nothing(db: Any, scratch_dir: Path,
                                                         full_record: dict[str, Any]) -> None:
    before = _snapshot(db)
    assert before["eligibilities"] and len(before["facilities"]) == 2 and before["conditions"]
    path = _write_jsonl(scratch_dir / "old.jsonl", _older(full_record))
    report = import_ctgov_json(db, path, refresh=False)
    assert _listed(report) == {"nct_id": NCT, "action": "kept", "added": [],
                               "reason": "ours is newer: last update 2006-08-24, this record 2001-03-01"}
    assert report.outcome.counts == {"kept": 1}
    assert _snapshot(db) == before


def test_import_merge_older_record_adds_only_what_ours_lacks(db: Any, scratch_dir: Path,
                                                             full_record: dict[str, Any]) -> None:
    before = _snapshot(db)
    older = _older(full_record, keywords=["Heart", "Lung"])
    report = import_ctgov_json(db, _write_jsonl(scratch_dir / "old.jsonl", older), refresh=False)
    assert _listed(report)["action"] == "enriched" and _listed(report)["added"] == ["keywords"]
    assert f"{NCT}: enriched — ours is newer" in "\n".join(report.as_dict()["outcome"]["lines"])
    after = _snapshot(db)
    assert [r["name"] for r in after.pop("keywords")] == ["Heart", "Lung"]
    before.pop("keywords")
    assert after == before


def test_import_merge_replace_takes_the_older_record(db: Any, scratch_dir: Path,
                                                     full_record: dict[str, Any]) -> None:
    report = import_ctgov_json(db, _write_jsonl(scratch_dir / "old.jsonl", _older(full_record)), replace=True,
                               refresh=False)
    assert _listed(report)["action"] == "replaced"
    assert _listed(report)["reason"] == "replaced as asked (--replace)"
    after = _snapshot(db)
    assert (after["eligibilities"], after["facilities"]) == ([], [])
    assert after["studies"][0]["brief_title"] == "An old title"


def test_import_merge_csv_row_over_a_full_record_changes_nothing(db: Any, scratch_dir: Path,
                                                                 full_record: dict[str, Any]) -> None:
    before = _snapshot(db)
    path = scratch_dir / "three.csv"
    path.write_text(f"NCT Number,Study Title,Study Status\n{NCT},A CSV title,COMPLETED\n", encoding="utf-8")
    report = import_ctgov_csv(db, path, refresh=False)
    listed = _listed(report)
    assert (listed["action"], listed["reason"]) == (
        "kept", "our copy is a full record; this source is partial (ctgov-csv)")
    assert _snapshot(db) == before


def _export(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in members.items():
            zf.writestr(name, text)
    return path


def test_import_merge_studies_only_export_keeps_every_other_table(db: Any, scratch_dir: Path,
                                                                  full_record: dict[str, Any]) -> None:
    before = _snapshot(db)
    studies = f"nct_id|brief_title|last_update_posted_date\n{NCT}|A newer title|2007-01-05\n"
    export = _export(scratch_dir / "studies_only.zip", {"studies.txt": studies})
    report = import_aact(db, export, refresh=False)
    assert _listed(report) == {"nct_id": NCT, "action": "replaced", "added": [],
                               "reason": "newer: last update 2007-01-05, ours 2006-08-24"}
    after = _snapshot(db)
    changed = {k: v for k, v in after["studies"][0].items() if before["studies"][0][k] != v}
    assert changed == {"brief_title": "A newer title", "last_update_posted_date": date(2007, 1, 5)}
    after.pop("studies")
    before.pop("studies")
    assert after == before  # criteria, sites, conditions and the provenance row stay


def test_import_merge_older_export_is_kept_and_reported(db: Any, scratch_dir: Path,
                                                        full_record: dict[str, Any]) -> None:
    before = _snapshot(db)
    studies = f"nct_id|brief_title|last_update_posted_date\n{NCT}|Old|2001-01-01\n"
    facilities = f"id|nct_id|name|city|country\n7|{NCT}|Old site|Lyon|France\n"
    report = import_aact(db, _export(scratch_dir / "old.zip", {"studies.txt": studies,
                                                               "facilities.txt": facilities}), refresh=False)
    assert _listed(report)["action"] == "kept"
    assert _snapshot(db) == before


def test_import_merge_refuses_two_members_for_one_table(db: Any, scratch_dir: Path) -> None:
    studies = "nct_id|brief_title\nNCT09999972|x\n"
    nested = _export(scratch_dir / "nested.zip", {"a/studies.txt": studies, "b/studies.txt": studies})
    both = "holds a/studies.txt and b/studies.txt, two files for the studies table"
    with pytest.raises(BadInput, match=both):
        import_aact(db, nested)
    twice = scratch_dir / "twice.zip"
    with pytest.warns(UserWarning, match="Duplicate name"), zipfile.ZipFile(twice, "w") as zf:
        zf.writestr("studies.txt", studies)
        zf.writestr("studies.txt", "nct_id|brief_title\nNCT09999973|y\n")
    with pytest.raises(BadInput, match="holds studies.txt and studies.txt, two files for the studies table"):
        import_aact(db, scratch_dir / "twice.zip")
    ids = ["NCT09999972", "NCT09999973"]
    assert db.fetch_value("SELECT count(*) FROM ctgov.studies WHERE nct_id = ANY(:ids)", {"ids": ids}) == 0


def test_import_merge_cli_replace_flag_and_per_study_report(db: Any, scratch_dir: Path,
                                                             full_record: dict[str, Any]) -> None:
    path = _write_jsonl(scratch_dir / "old.jsonl", _older(full_record))
    env = dict(os.environ, DATABASE_URL=db.url)
    run = [sys.executable, "-m", "services", "import", "ctgov-json", str(path), "--quiet", "--no-start-cache"]
    kept = subprocess.run(run, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=600)
    assert kept.returncode == 0, kept.stderr
    assert f"{NCT}: kept — ours is newer: last update 2006-08-24, this record 2001-03-01" in kept.stdout
    replaced = subprocess.run([*run, "--replace"], cwd=PROJECT, env=env, capture_output=True, text=True,
                              timeout=600)
    assert replaced.returncode == 0, replaced.stderr
    assert f"{NCT}: replaced — replaced as asked (--replace)" in replaced.stdout
    assert db.fetch_value("SELECT count(*) FROM ctgov.facilities WHERE nct_id = :n", {"n": NCT}) == 0
    _remove(db)  # the commands refreshed the derived tables with the study in them: again without it
    db.execute_script(load_sql("refresh_study_facets") + "\n" + REFRESH_SEARCH)
