"""One odd study never sinks a file: wrong-typed values are coerced as AACT does, or that study is skipped and
reported by file, line, NCT id and field; --strict keeps all-or-nothing."""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path

import pytest

from services.data.loaders import import_ctgov_json
from services.errors import BadInput

SAMPLE = Path("data/ctgov_sample.jsonl.gz")


def _studies(n: int) -> list[dict]:
    with gzip.open(SAMPLE, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in itertools.islice((ln for ln in fh if ln.strip()), n)]


def _nct(study: dict) -> str:
    return study["protocolSection"]["identificationModule"]["nctId"]


def _write(path: Path, studies: list[dict]) -> Path:
    path.write_text("".join(json.dumps(s) + "\n" for s in studies), encoding="utf-8")
    return path


def _spoil(studies: list[dict]) -> dict[str, str]:
    """Three studies get a value no column can take; returns NCT id → the field we expect named."""
    bad = {}
    ps = studies[3]["protocolSection"]
    ps.setdefault("designModule", {}).setdefault("enrollmentInfo", {})["count"] = "about a hundred"
    bad[_nct(studies[3])] = "studies.enrollment"
    ps = studies[11]["protocolSection"]
    ps.setdefault("conditionsModule", {})["conditions"] = [{"name": "an object where a name belongs"}]
    bad[_nct(studies[11])] = "conditions.name"
    ps = studies[20]["protocolSection"]
    ps.setdefault("eligibilityModule", {})["healthyVolunteers"] = "maybe"
    bad[_nct(studies[20])] = "eligibilities.healthy_volunteers"
    return bad


def test_robustness_three_bad_studies_skipped_and_reported(db, scratch_dir):
    studies = _studies(30)
    # Strings AACT maps to booleans are coerced, not skipped.
    studies[5]["protocolSection"].setdefault("designModule", {})["patientRegistry"] = "Yes"
    studies[6]["protocolSection"].setdefault("designModule", {})["patientRegistry"] = "YES"
    studies[7]["protocolSection"].setdefault("designModule", {}).setdefault("enrollmentInfo", {})["count"] = "42"
    bad = _spoil(studies)
    before = {n: db.fetch_value("SELECT count(*) FROM ctgov.conditions WHERE nct_id = :n", {"n": n}) for n in bad}
    path = _write(scratch_dir / "three_bad.jsonl", studies)
    try:
        report = import_ctgov_json(db, path)
        assert report.studies == len(studies) - 3
        got = {s["nct_id"]: s for s in report.skipped}
        assert set(got) == set(bad)
        for nct, fld in bad.items():
            assert got[nct]["field"] == fld
            assert got[nct]["file"] == path.name
            line = next(i for i, s in enumerate(studies, start=1) if _nct(s) == nct)
            assert got[nct]["line"] == line
            assert any(nct in note and fld in note for note in report.notes)
        for i in (5, 6):
            assert db.fetch_value("SELECT patient_registry FROM ctgov.studies WHERE nct_id = :n",
                                  {"n": _nct(studies[i])}) is True
        assert db.fetch_value("SELECT enrollment FROM ctgov.studies WHERE nct_id = :n", {"n": _nct(studies[7])}) == 42
        # The skipped studies keep what they had (their old rows are not touched).
        for nct in bad:
            assert db.fetch_value("SELECT count(*) FROM ctgov.conditions WHERE nct_id = :n", {"n": nct}) == before[nct]
    finally:
        import_ctgov_json(db, _write(scratch_dir / "restore.jsonl", _studies(30)))


def test_robustness_strict_refuses_whole_file(db, scratch_dir):
    studies = _studies(30)
    bad = _spoil(studies)
    first_bad = next(_nct(s) for s in studies if _nct(s) in bad)
    studies[0]["protocolSection"]["identificationModule"]["briefTitle"] = "CHANGED BY A REFUSED IMPORT"
    path = _write(scratch_dir / "strict.jsonl", studies)
    with pytest.raises(BadInput) as info:
        import_ctgov_json(db, path, strict=True)
    assert first_bad in str(info.value) and bad[first_bad] in str(info.value)
    assert db.fetch_value("SELECT count(*) FROM ctgov.studies WHERE brief_title = 'CHANGED BY A REFUSED IMPORT'") == 0


def test_loader_numbers_with_separators_or_not_available_markers_keep_their_study():
    """Real registry values: '22,949' is that number; 'NA' in a count is not available (NULL), not a reason to
    drop the study; text that is no number at all still is."""
    from services.data.loaders.coerce import FieldError, coerce_row

    cols = ("nct_id", "count")
    assert coerce_row("baseline_counts", cols, {"nct_id": "NCT1", "count": "22,949"}) == ("NCT1", 22949)
    assert coerce_row("outcome_counts", cols, {"nct_id": "NCT1", "count": "NA"}) == ("NCT1", None)
    with pytest.raises(FieldError):
        coerce_row("outcome_counts", cols, {"nct_id": "NCT1", "count": "1,2"})


def test_loader_whole_numbers_the_column_cannot_hold_are_a_field_error():
    """An integer column holds -2,147,483,648 … 2,147,483,647: a bigger count used to reach COPY (which refused the
    whole import without naming the study) and "1e400" raised OverflowError; both are now that study's FieldError."""
    from services.data.loaders.coerce import FieldError, coerce_row

    cols = ("nct_id", "enrollment")
    for value in (3_000_000_000, "3000000000", 2.5e10, "1e400", -2**31 - 1):
        with pytest.raises(FieldError, match="studies.enrollment"):
            coerce_row("studies", cols, {"nct_id": "NCT1", "enrollment": value})
    for value, stored in ((2**31 - 1, 2**31 - 1), ("-2147483648", -2**31), ("1.70", 1), (True, 1), ("1e3", 1000)):
        assert coerce_row("studies", cols, {"nct_id": "NCT1", "enrollment": value}) == ("NCT1", stored)


def test_robustness_a_count_too_big_for_its_column_skips_only_that_study(db, scratch_dir):
    studies = _studies(5)
    studies[2]["protocolSection"].setdefault("designModule", {}).setdefault("enrollmentInfo", {})["count"] = 3_000_000_000
    path = _write(scratch_dir / "too_big.jsonl", studies)
    try:
        report = import_ctgov_json(db, path, refresh=False)
        assert report.studies == 4
        assert [(s["nct_id"], s["field"], s["line"]) for s in report.skipped] == [
            (_nct(studies[2]), "studies.enrollment", 3)]
    finally:
        import_ctgov_json(db, _write(scratch_dir / "restore_too_big.jsonl", _studies(5)), refresh=False)



def test_loader_numbers_a_numeric_column_cannot_hold_are_a_field_error():
    """A coordinate is numeric(10,6) (at most 4 integer digits) and a plain numeric holds at most 131,072 integer and
    16,383 decimal digits: a value beyond either used to reach COPY, which refused the whole import without naming
    the study. A whole number written with a huge exponent is refused before int() spends seconds expanding it."""
    import time

    from services.data.loaders.coerce import FieldError, coerce_row

    cols = ("nct_id", "latitude")
    for value in (12345.5, "-10000", "9999.9999996", "1e400", -1e300):
        with pytest.raises(FieldError, match="facilities.latitude"):
            coerce_row("facilities", cols, {"nct_id": "NCT1", "latitude": value})
    for value, stored in ((42.36, "42.36"), ("-71.0589", "-71.0589"), (9999.999999, "9999.999999"), (0, "0")):
        assert str(coerce_row("facilities", cols, {"nct_id": "NCT1", "latitude": value})[1]) == stored
    cols = ("nct_id", "param_value_num")
    for value in ("1e131072", "1e-16384"):
        with pytest.raises(FieldError, match="baseline_measurements.param_value_num"):
            coerce_row("baseline_measurements", cols, {"nct_id": "NCT1", "param_value_num": value})
    assert coerce_row("baseline_measurements", cols, {"nct_id": "NCT1", "param_value_num": "1e131071"})[1] > 0
    started = time.monotonic()
    for value in ("1e500000", "-7e999999999"):
        with pytest.raises(FieldError, match="studies.enrollment"):
            coerce_row("studies", ("nct_id", "enrollment"), {"nct_id": "NCT1", "enrollment": value})
    assert time.monotonic() - started < 1.0  # was 21 s for the first value alone


def test_robustness_a_coordinate_out_of_range_skips_only_that_study(db, scratch_dir):
    studies = _studies(5)
    with_site = next(i for i, s in enumerate(studies) if s["protocolSection"].get("contactsLocationsModule", {})
                     .get("locations"))
    location = studies[with_site]["protocolSection"]["contactsLocationsModule"]["locations"][0]
    location["geoPoint"] = {"lat": 12345.5, "lon": 10.0}
    path = _write(scratch_dir / "far_away.jsonl", studies)
    try:
        report = import_ctgov_json(db, path, refresh=False)
        assert report.studies == 4
        assert [(s["nct_id"], s["field"], s["line"]) for s in report.skipped] == [
            (_nct(studies[with_site]), "facilities.latitude", with_site + 1)]
    finally:
        import_ctgov_json(db, _write(scratch_dir / "restore_far_away.jsonl", _studies(5)), refresh=False)


@pytest.mark.parametrize(("name", "text", "line"), [
    ("deep.jsonl", json.dumps({"protocolSection": {}}) + "\n" + '{"a": ' * 100_000 + "\n", 2),
    ("deep.json", "[\n" + "[" * 100_000 + "\n", 2),  # the line where the nested item starts
    ("deep_csv.jsonl", '{"NCT Number": ' * 100_000 + "\n", 1),
])
def test_loader_json_nested_too_deeply_is_refused_by_line(tmp_path: Path, name: str, text: str, line: int) -> None:
    from services.data.loaders import ctgov_csv, ctgov_json

    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    read = ctgov_csv.read_rows if name.startswith("deep_csv") else ctgov_json.read_studies
    with pytest.raises(BadInput, match=rf"{name}: line {line}: JSON nested too deeply to read"):
        list(read(path))


def test_robustness_text_postgresql_cannot_store_skips_only_that_study(db, scratch_dir):
    # A NUL character (JSON "\u0000") or half of a surrogate pair ("\ud800") in a text field used to stop the whole
    # import with "The database refused the query: invalid byte sequence for encoding "UTF8": 0x00", naming no file,
    # line or study.
    studies = _studies(5)
    studies[1]["protocolSection"]["identificationModule"]["briefTitle"] = "A trial\u0000 of something"
    studies[3]["protocolSection"].setdefault("conditionsModule", {})["conditions"] = ["Asthma \ud800"]
    bad = {_nct(studies[1]): ("studies.brief_title", "a NUL character"),
           _nct(studies[3]): ("conditions.name", "half of a surrogate pair")}
    path = _write(scratch_dir / "unstorable.jsonl", studies)
    try:
        report = import_ctgov_json(db, path)
        assert report.studies == 3
        got = {s["nct_id"]: s for s in report.skipped}
        assert set(got) == set(bad)
        for nct, (fld, what) in bad.items():
            assert got[nct]["field"] == fld
            assert any(nct in note and fld in note and what in note for note in report.notes)
    finally:
        import_ctgov_json(db, _write(scratch_dir / "restore.jsonl", _studies(5)))
