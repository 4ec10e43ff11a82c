"""Loaders against the real sample: whole rows, counts from the raw files, refusal of bad input."""

from __future__ import annotations

import gzip
import json
import zipfile
from collections import Counter
from datetime import date
from pathlib import Path

import pytest

from services.data.db import load_sql
from services.data.loaders import REFRESH_SEARCH, import_aact, import_ctgov_csv, import_ctgov_json
from services.data.loaders.common import STUDY_TABLES
from services.errors import BadInput


def table_counts(db) -> dict[str, int]:
    return {t: int(db.fetch_value(f"SELECT count(*) FROM ctgov.{t}")) for t in STUDY_TABLES}


def test_loaders_kowa_study_whole_row(db):
    row = db.fetch_rows("SELECT nct_id, phase, overall_status, study_type, enrollment, enrollment_type, start_date, "
                        "primary_completion_date, source_class, brief_title FROM ctgov.studies "
                        "WHERE nct_id = 'NCT05923281'")
    assert [{**r, "start_date": str(r["start_date"]), "primary_completion_date": str(r["primary_completion_date"])}
            for r in row] == [{
        "nct_id": "NCT05923281", "phase": "PHASE3", "overall_status": "RECRUITING", "study_type": "INTERVENTIONAL",
        "enrollment": 60, "enrollment_type": "ESTIMATED", "start_date": "2023-05-01",
        "primary_completion_date": "2024-10-31", "source_class": "INDUSTRY",
        "brief_title": "A Phase III Confirmatory Study of K-877 (Pemafibrate) in Patients With Hypercholesterolemia "
                       "and Statin Intolerance"}]
    assert db.fetch_rows("SELECT name, agency_class, lead_or_collaborator FROM ctgov.sponsors "
                         "WHERE nct_id = 'NCT05923281' ORDER BY id") == [
        {"name": "Kowa Company, Ltd.", "agency_class": "INDUSTRY", "lead_or_collaborator": "lead"}]
    sites = db.fetch_rows("SELECT country, latitude IS NOT NULL AND longitude IS NOT NULL AS geo "
                          "FROM ctgov.facilities WHERE nct_id = 'NCT05923281'")
    assert len(sites) == 15 and all(s["country"] == "Japan" and s["geo"] for s in sites)
    assert db.fetch_rows("SELECT minimum_age, gender FROM ctgov.eligibilities WHERE nct_id = 'NCT05923281'") == [
        {"minimum_age": "18 Years", "gender": "ALL"}]
    cv = db.fetch_rows("SELECT number_of_facilities, has_us_facility, minimum_age_num, minimum_age_unit "
                       "FROM ctgov.calculated_values WHERE nct_id = 'NCT05923281'")
    assert cv == [{"number_of_facilities": 15, "has_us_facility": False, "minimum_age_num": 18,
                   "minimum_age_unit": "year"}]


def test_loaders_sport_study_whole_row(db):
    # NCT00000410: the first v2 record; dates are month-only, so AACT stores the month's last day.
    row = db.fetch_rows("SELECT phase, overall_status, enrollment, enrollment_type, start_month_year, start_date, "
                        "has_dmc, acronym, source FROM ctgov.studies WHERE nct_id = 'NCT00000410'")[0]
    assert {**row, "start_date": str(row["start_date"])} == {
        "phase": "PHASE4", "overall_status": "COMPLETED", "enrollment": 501, "enrollment_type": "ACTUAL",
        "start_month_year": "2000-03", "start_date": "2000-03-31", "has_dmc": True, "acronym": "SPORT",
        "source": "Dartmouth-Hitchcock Medical Center"}
    assert [r["name"] for r in db.fetch_rows(
        "SELECT name FROM ctgov.conditions WHERE nct_id = 'NCT00000410' ORDER BY id")] == ["Herniated Disc",
                                                                                           "Low Back Pain"]
    sponsors = db.fetch_rows("SELECT agency_class, lead_or_collaborator FROM ctgov.sponsors "
                             "WHERE nct_id = 'NCT00000410' ORDER BY id")
    assert sponsors == [{"agency_class": "OTHER", "lead_or_collaborator": "lead"},
                        {"agency_class": "NIH", "lead_or_collaborator": "collaborator"},
                        {"agency_class": "FED", "lead_or_collaborator": "collaborator"},
                        {"agency_class": "NIH", "lead_or_collaborator": "collaborator"}]


def test_loaders_csv_study_whole_row(db, raw_csv):
    row = next(r for r in raw_csv if r["NCT Number"] == "NCT00000173")
    got = db.fetch_rows("SELECT brief_title, overall_status, study_type, phase FROM ctgov.studies "
                        "WHERE nct_id = 'NCT00000173'")
    assert got == [{"brief_title": row["Study Title"], "overall_status": "COMPLETED",
                    "study_type": "INTERVENTIONAL", "phase": None}]
    assert db.fetch_rows("SELECT intervention_type, name FROM ctgov.interventions WHERE nct_id = 'NCT00000173' "
                         "ORDER BY id") == [{"intervention_type": "DRUG", "name": "Donepezil"},
                                            {"intervention_type": "DRUG", "name": "Vitamin E"}]
    assert db.fetch_rows("SELECT name, lead_or_collaborator FROM ctgov.sponsors WHERE nct_id = 'NCT00000173' "
                         "ORDER BY id") == [
        {"name": "National Institute on Aging (NIA)", "lead_or_collaborator": "lead"},
        {"name": "Alzheimer's Disease Cooperative Study (ADCS)", "lead_or_collaborator": "collaborator"}]


def _v2_phase(study: dict) -> str | None:
    return "/".join(study["protocolSection"].get("designModule", {}).get("phases") or []) or None


def _csv_phase(row: dict) -> str | None:
    return "/".join(p.strip() for p in (row.get("Phases") or "").split("|") if p.strip()) or None


def test_loaders_status_and_phase_counts_match_all_shipped_files(db, raw_v2, raw_csv):
    """Every study in the database comes from a shipped file: status and phase counts computed from the files."""
    want_status = Counter([s["protocolSection"]["statusModule"]["overallStatus"] for s in raw_v2]
                          + [r["Study Status"] for r in raw_csv])
    want_phase = Counter([_v2_phase(s) for s in raw_v2] + [_csv_phase(r) for r in raw_csv])
    got_status = {r["overall_status"]: r["n"] for r in db.fetch_rows(
        "SELECT overall_status, count(*) AS n FROM ctgov.studies GROUP BY 1")}
    got_phase = {r["phase"]: r["n"] for r in db.fetch_rows("SELECT phase, count(*) AS n FROM ctgov.studies GROUP BY 1")}
    assert got_status == dict(want_status)
    assert got_phase == dict(want_phase)
    assert sum(got_status.values()) == len(raw_v2) + len(raw_csv)


def test_loaders_v2_status_and_phase_per_study_match_raw_json(db, raw_v2):
    ids = [s["protocolSection"]["identificationModule"]["nctId"] for s in raw_v2]
    want = {i: (s["protocolSection"]["statusModule"]["overallStatus"], _v2_phase(s)) for i, s in zip(ids, raw_v2, strict=True)}
    got = {r["nct_id"]: (r["overall_status"], r["phase"]) for r in db.fetch_rows(
        "SELECT nct_id, overall_status, phase FROM ctgov.studies WHERE nct_id = ANY(:ids)", {"ids": ids})}
    assert got == want


def test_loaders_csv_status_counts_match_raw(db, raw_csv):
    ids = [r["NCT Number"] for r in raw_csv]
    want = Counter(r["Study Status"] for r in raw_csv)
    got = {r["overall_status"]: r["n"] for r in db.fetch_rows(
        "SELECT overall_status, count(*) AS n FROM ctgov.studies WHERE nct_id = ANY(:ids) GROUP BY 1", {"ids": ids})}
    assert got == dict(want)


def test_loaders_totals_and_geocoded_sites(db, raw_v2, raw_csv):
    assert db.fetch_value("SELECT count(*) FROM ctgov.studies") == len(raw_v2) + len(raw_csv)
    # every v2 geoPoint is kept exactly
    ids = [s["protocolSection"]["identificationModule"]["nctId"] for s in raw_v2]
    points = sum(1 for s in raw_v2 for loc in (s["protocolSection"].get("contactsLocationsModule") or {})
                 .get("locations") or [] if loc.get("geoPoint"))
    assert db.fetch_value("SELECT count(*) FROM ctgov.facilities WHERE nct_id = ANY(:ids) "
                          "AND latitude IS NOT NULL", {"ids": ids}) == points
    # and CSV sites are geocoded offline on top of them
    assert db.fetch_value("SELECT count(*) FROM ctgov.facilities WHERE latitude IS NOT NULL") > points


def test_loaders_full_and_partial_records_follow_the_files(db, raw_v2, raw_csv, raw_fill):
    from services.data import provenance

    csv_ids = {r["NCT Number"] for r in raw_csv}
    counts = provenance.record_counts(db)
    assert (counts.full, counts.partial) == (len(raw_v2), len(raw_csv))
    assert counts.criteria_added == sum(1 for f in raw_fill if f["nct_id"] in csv_ids)
    # an upgraded CSV study is a full record now, with the v2 record's criteria text
    upgraded = next(s for s in raw_v2 if s["protocolSection"]["identificationModule"]["nctId"] in
                    {f["nct_id"] for f in raw_fill})
    nct = upgraded["protocolSection"]["identificationModule"]["nctId"]
    assert not provenance.lookup(db, nct).partial
    assert db.fetch_value("SELECT criteria FROM ctgov.eligibilities WHERE nct_id = :n", {"n": nct}) == \
        upgraded["protocolSection"]["eligibilityModule"]["eligibilityCriteria"]


def test_loaders_criteria_fill_attaches_text_source_and_date(db, raw_csv, raw_fill):
    from services.data import provenance

    csv_ids = {r["NCT Number"] for r in raw_csv}
    fills = [f for f in raw_fill if f["nct_id"] in csv_ids]
    got = {r["nct_id"]: r["criteria"] for r in db.fetch_rows(
        "SELECT nct_id, criteria FROM ctgov.eligibilities WHERE nct_id = ANY(:ids)", {"ids": [f["nct_id"] for f in fills]})}
    assert got == {f["nct_id"]: f["eligibility_criteria"] for f in fills}
    dated = next(f for f in fills if f.get("as_of"))
    prov = provenance.lookup(db, dated["nct_id"])
    assert (prov.criteria_source, prov.criteria_format, str(prov.criteria_as_of)) == (
        dated["source"], dated["criteria_format"], dated["as_of"])
    assert "criteria" not in prov.lacks and prov.partial
    assert dated["source"] in provenance.criteria_origin(prov) and dated["as_of"] in provenance.criteria_origin(prov)


def test_loaders_reimporting_upgrades_and_fills_is_idempotent(db):
    from services.data import runtime
    from services.data.loaders import import_criteria_fill

    def state() -> tuple[dict[str, int], list[dict]]:
        return table_counts(db), db.fetch_rows("SELECT * FROM app.study_sources ORDER BY nct_id")

    before = state()
    kinds = dict((p.name, k) for k, p in runtime.SAMPLE_FILES)
    upgrades = next(p for k, p in runtime.SAMPLE_FILES if p.name == "csv_only_upgrades.jsonl.gz")
    fill = next(p for k, p in runtime.SAMPLE_FILES if kinds[p.name] == "criteria-fill")
    import_ctgov_json(db, upgrades, refresh=False)
    report = import_criteria_fill(db, fill)
    assert any("already a full record" in n for n in report.notes)
    assert state() == before


def test_loaders_reimport_replaces_not_duplicates(db, scratch_dir):
    before = table_counts(db)
    src = scratch_dir / "five.jsonl"
    with gzip.open(Path("data/ctgov_sample.jsonl.gz"), "rt") as fh:
        src.write_text("".join(next(fh) for _ in range(5)))
    report = import_ctgov_json(db, src)
    assert report.studies == 5
    assert table_counts(db) == before


def _assert_refused(db, importer, path: Path, fragment: str) -> None:
    before = table_counts(db)
    with pytest.raises(BadInput) as info:
        importer(db, path)
    assert fragment in str(info.value)
    assert str(path) in str(info.value) or path.name in str(info.value)
    assert table_counts(db) == before


def _two_studies() -> list[str]:
    with gzip.open(Path("data/ctgov_sample.jsonl.gz"), "rt") as fh:
        return [next(fh), next(fh)]


def test_loaders_refuse_truncated_gzip(db, scratch_dir):
    data = gzip.compress("".join(_two_studies()).encode())
    path = scratch_dir / "cut.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    _assert_refused(db, import_ctgov_json, path, "truncated or corrupt")


def test_loaders_refuse_non_utf8(db, scratch_dir):
    lines = _two_studies()
    path = scratch_dir / "latin1.jsonl"
    # a Latin-1 "é" (one byte 0xE9) inside the second line
    path.write_bytes(lines[0].encode() + lines[1].encode().replace(b'{"', b'{"\xe9', 1))
    _assert_refused(db, import_ctgov_json, path, "line 2: bytes that are not UTF-8")


def test_loaders_refuse_duplicate_nct(db, scratch_dir):
    line = _two_studies()[0]
    path = scratch_dir / "dup.jsonl"
    path.write_text(line + line)
    _assert_refused(db, import_ctgov_json, path, "line 2: duplicate study NCT00000410")


def test_loaders_refuse_missing_nct_id(db, scratch_dir):
    first, second = _two_studies()
    study = json.loads(second)
    del study["protocolSection"]["identificationModule"]["nctId"]
    path = scratch_dir / "nonct.jsonl"
    path.write_text(first + json.dumps(study) + "\n")
    _assert_refused(db, import_ctgov_json, path, "line 2: missing or malformed nctId")


def test_loaders_refuse_csv_wrong_columns(db, scratch_dir):
    path = scratch_dir / "wrong.csv"
    path.write_text("Trial,Name,State\nNCT01234567,x,y\n")
    _assert_refused(db, import_ctgov_csv, path, "missing column(s) NCT Number")


def test_loaders_refuse_malformed_json_line(db, scratch_dir):
    path = scratch_dir / "broken.jsonl"
    path.write_text(_two_studies()[0] + '{"protocolSection": {\n')
    _assert_refused(db, import_ctgov_json, path, "line 2: not valid JSON")


def test_loaders_csv_file_import(db, scratch_dir):
    path = scratch_dir / "ctg-studies.csv"
    path.write_text("NCT Number,Study Title,Study Status,Conditions,Locations\n"
                    "NCT09999991,Test study,RECRUITING,Type 2 Diabetes|Obesity,"
                    "\"Site A, Houston, Texas, 77030, United States|Site B, Osaka, Japan\"\n")
    try:
        report = import_ctgov_csv(db, path)
        assert report.studies == 1
        rows = db.fetch_rows("SELECT city, state, country, round(latitude) AS lat FROM ctgov.facilities "
                             "WHERE nct_id = 'NCT09999991' ORDER BY id")
        assert rows == [{"city": "Houston", "state": "Texas", "country": "United States", "lat": 30},
                        {"city": "Osaka", "state": None, "country": "Japan", "lat": 35}]
    finally:
        db.execute("DELETE FROM ctgov.studies WHERE nct_id = 'NCT09999991'")
        for t in STUDY_TABLES:
            db.execute(f"DELETE FROM ctgov.{t} WHERE nct_id = 'NCT09999991'")
        _refresh_derived(db)


def test_loaders_a_file_saved_with_a_byte_order_mark_is_read(db, scratch_dir):
    # Excel's "CSV UTF-8" starts the file with a byte order mark: the header's first name became "\ufeffNCT Number"
    # and the download was refused as "missing column(s) NCT Number — this does not look like a ClinicalTrials.gov
    # CSV download"; a JSON-lines file with one was "not valid JSON (Unexpected UTF-8 BOM …)".
    csv_path = scratch_dir / "excel.csv"
    csv_path.write_bytes(b"\xef\xbb\xbfNCT Number,Study Title,Study Status\nNCT09999991,Test study,RECRUITING\n")
    json_path = scratch_dir / "bom.jsonl"
    json_path.write_bytes(b"\xef\xbb\xbf" + "".join(_two_studies()).encode())
    try:
        assert import_ctgov_csv(db, csv_path).studies == 1
        assert db.fetch_value("SELECT brief_title FROM ctgov.studies WHERE nct_id = 'NCT09999991'") == "Test study"
        assert import_ctgov_json(db, json_path).studies == 2
    finally:
        for t in STUDY_TABLES:
            db.execute(f"DELETE FROM ctgov.{t} WHERE nct_id = 'NCT09999991'")
        _refresh_derived(db)


@pytest.mark.parametrize(("text", "what"), [("Age \u0000 18", "a NUL character"),
                                            ("Age \ud800 18", "half of a surrogate pair")])
def test_loaders_criteria_fill_text_postgresql_cannot_store_is_refused_by_line(db, scratch_dir, text, what):
    # It used to reach the database and stop with "invalid byte sequence for encoding "UTF8": 0x00", naming no line.
    from services.data.loaders import import_criteria_fill

    path = scratch_dir / "fill.jsonl"
    rows = [{"nct_id": "NCT09999997", "eligibility_criteria": "Adults", "source": "site"},
            {"nct_id": "NCT09999998", "eligibility_criteria": text, "source": "site"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _assert_refused(db, import_criteria_fill, path, f"line 2: NCT09999998's eligibility_criteria holds {what}")


def _refresh_derived(db) -> None:  # noqa: ANN001 - services.data.db.Database
    """Rebuild the derived per-study tables (and the search documents, which hold the rebuilt dictionary's term ids)
    after deleting a test study, so later tests see the sample only."""
    db.execute_script(load_sql("refresh_study_facets") + "\n" + REFRESH_SEARCH)


def _aact_export(path: Path, studies: str, facilities: str | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("studies.txt", studies)
        if facilities is not None:
            zf.writestr("facilities.txt", facilities)
        zf.writestr("mesh_terms.txt", "id|qualifier|tree_number|description|mesh_term\n1|C04|C04.557|x|Neoplasms\n")
    return path


def test_loaders_aact_flat_export(db, scratch_dir):
    studies = ("nct_id|brief_title|overall_status|phase|enrollment|has_dmc|start_date|new_column\n"
               "NCT09999992|A \"quoted\" | piped title|RECRUITING|PHASE1/PHASE2|40|t|2024-01-31|x\n")
    studies = studies.replace('A "quoted" | piped title', '"A ""quoted"" | piped title"')
    facilities = ("id|nct_id|status|name|city|state|zip|country|latitude|longitude\n"
                  "900000001|NCT09999992||MS Integrated Center|Phoenix|Arizona|85018|United States|33.448380|-112.074040\n")
    path = _aact_export(scratch_dir / "20260901_pipe-delimited-export.zip", studies, facilities)
    try:
        report = import_aact(db, path)
        assert report.studies == 1 and report.rows["studies"] == 1 and report.rows["facilities"] == 1
        assert any("mesh_terms.txt" in n for n in report.notes)
        assert any("new_column" in n for n in report.notes)
        row = db.fetch_rows("SELECT brief_title, phase, has_dmc, enrollment FROM ctgov.studies "
                            "WHERE nct_id = 'NCT09999992'")
        assert row == [{"brief_title": 'A "quoted" | piped title', "phase": "PHASE1/PHASE2", "has_dmc": True,
                        "enrollment": 40}]
        import_aact(db, path)  # idempotent
        assert db.fetch_value("SELECT count(*) FROM ctgov.facilities WHERE nct_id = 'NCT09999992'") == 1
    finally:
        for t in STUDY_TABLES:
            db.execute(f"DELETE FROM ctgov.{t} WHERE nct_id = 'NCT09999992'")
        _refresh_derived(db)


def test_loaders_aact_rows_of_studies_not_in_the_export_are_left_out(db, scratch_dir):
    studies = "nct_id|brief_title\nNCT09999994|kept\n"
    facilities = ("id|nct_id|status|name|city|state|zip|country|latitude|longitude\n"
                  "1|NCT09999994||Site A|Phoenix|Arizona|85018|United States||\n"
                  "2|NCT09999995||Site B|Austin|Texas|78701|United States||\n")
    path = _aact_export(scratch_dir / "orphans.zip", studies, facilities)
    try:
        for _ in range(2):  # each import replaces only the studies in studies.txt; nothing piles up
            report = import_aact(db, path)
            assert (report.studies, report.rows["facilities"]) == (1, 1)
            assert "facilities: left out 1 row of studies not in studies.txt" in report.notes
        counts = db.fetch_rows("SELECT nct_id, count(*) AS n FROM ctgov.facilities "
                               "WHERE nct_id IN ('NCT09999994', 'NCT09999995') GROUP BY 1 ORDER BY 1")
        assert counts == [{"nct_id": "NCT09999994", "n": 1}]
    finally:
        for t in STUDY_TABLES:
            db.execute(f"DELETE FROM ctgov.{t} WHERE nct_id IN ('NCT09999994', 'NCT09999995')")
        _refresh_derived(db)


def test_loaders_aact_refuses_bad_export(db, scratch_dir):
    path = _aact_export(scratch_dir / "bad.zip", "id|title\n1|x\n")
    _assert_refused(db, import_aact, path, "no nct_id column")
    dup = _aact_export(scratch_dir / "dup.zip", "nct_id|brief_title\nNCT09999993|a\nNCT09999993|b\n")
    _assert_refused(db, import_aact, dup, "line 3: duplicate study NCT09999993")


@pytest.mark.parametrize("value", ["２０２４-01-01", "２０２４-01", "٢٠٢٤", "२०२४-05", "2024-٠١"])
def test_loaders_api_dates_are_read_in_ascii_digits_only(value):
    # "٢٠٢٤" used to become 2024-12-31 and "２０２４-01" 2024-01-31 while "２０２４-01-01" gave no date: the same
    # registry field was read or dropped by its length. The registry writes ISO dates in ASCII digits.
    from services.data.loaders.common import parse_api_date

    assert parse_api_date(value) is None
    assert (parse_api_date("2024"), parse_api_date(" 2024-02 "), parse_api_date("2024-02-29")) == (
        date(2024, 12, 31), date(2024, 2, 29), date(2024, 2, 29))


FACILITY_HEADER = "id|nct_id|status|name|city|state|zip|country|latitude|longitude\n"


@pytest.mark.parametrize(("studies", "facilities", "fragment"), [
    ("nct_id|brief_title|enrollment\nNCT09999994|kept|40\nNCT09999995|odd|forty\n", None,
     'studies.txt: line 3: column enrollment: invalid input syntax for type integer: "forty"; nothing was imported'),
    ("nct_id|brief_title|start_date\nNCT09999994|kept|2024-02-30\n", None,
     "studies.txt: line 2: column start_date: date/time field value out of range"),
    # the row of a study not in studies.txt is left out, and the line is still the file's
    ("nct_id|brief_title\nNCT09999994|kept\n", FACILITY_HEADER + "1|NCT09999996||A|B|C|1|US||\n"
     "2|NCT09999994||A|B|C|1|US|north|\n", "facilities.txt: line 3: column latitude: invalid input syntax"),
    ("nct_id|brief_title\nNCT09999994|ke\x00pt\n", None,
     "studies.txt: line 2: holds a NUL character, which PostgreSQL cannot store"),
])
def test_loaders_aact_value_a_column_cannot_hold_names_file_line_and_column(db, scratch_dir, studies, facilities,
                                                                            fragment):
    # These used to stop the import with only "The database refused the query: invalid input syntax for type
    # integer: "forty"" (or "invalid byte sequence for encoding "UTF8": 0x00"), naming no file, line or column.
    _assert_refused(db, import_aact, _aact_export(scratch_dir / "odd.zip", studies, facilities), fragment)
