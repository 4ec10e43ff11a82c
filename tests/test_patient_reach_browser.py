"""Issue 19's whole path in a real browser (Chromium, guided mode, no model): a lung-cancer patient brings an Apple
Health export made here (daily steps and two labs) and a labs CSV; the eligibility check judges a selected trial's
lab limit from the uploaded value with its date; the report carries the message to the study team and the questions
grouped by who can answer them; "Forget this session" deletes the uploads (checked in the database).
Screenshots of the health-data view, the grouped questions and the contact message go to /tmp/shots/."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

from services.assistant.store import storage_key
from tests.test_browser import (  # noqa: F401 - pytest fixtures used by name
    LOAD_TIMEOUT_MS,
    SHOTS,
    app_url,
    browser,
    exceptions,
    page,
    playwright_api,
    pytestmark,
    settle,
)

# A trial of the sample that the guided search finds for this patient and whose exclusion "haemoglobin < 90 g/L"
# the rules can judge from an uploaded haemoglobin in g/dL (converted).
TRIAL = "NCT06194448"
# Question groups every lung-cancer report with this trial has: the oncologist's and the trial team's.
GROUPS = ("Your oncologist (diagnosis, stage, treatments)", "The trial team (visits, travel, consent, pregnancy rules)")
STEPS = [(f"2026-10-{day:02d}", n) for day, n in
         zip(range(1, 11), (5200, 6100, 4800, 7300, 6600, 5900, 6400, 7100, 5600, 6800), strict=True)]
LABS_CSV = b"date,name,value,unit\n2026-10-02,Platelets,210,x10^9/L\n2026-10-02,ANC,3.2,x10^9/L\n"


def _observation(loinc: str, text: str, value: float, unit: str, day: str) -> str:
    return json.dumps({"resourceType": "Observation", "status": "final",
                       "code": {"coding": [{"system": "http://loinc.org", "code": loinc}], "text": text},
                       "valueQuantity": {"value": value, "unit": unit}, "effectiveDateTime": day})


def _apple_health_zip(path: Path) -> None:
    """An export.zip shaped like the iPhone's: export.xml with step records and two clinical (FHIR) lab records."""
    records = "".join(
        f'<Record type="HKQuantityTypeIdentifierStepCount" sourceName="iPhone" unit="count" value="{n}" '
        f'startDate="{day} 08:00:00 -0400" endDate="{day} 20:00:00 -0400" creationDate="{day} 21:00:00 -0400"/>\n'
        for day, n in STEPS)
    xml = ('<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE HealthData [\n<!ELEMENT HealthData (Record*)>\n]>\n'
           '<HealthData locale="en_US">\n<ExportDate value="2026-10-05 09:00:00 -0400"/>\n' + records +
           '<ClinicalRecord type="HKClinicalTypeIdentifierLabResultRecord" identifier="1" sourceName="Hospital" '
           'fhirVersion="4.0.1" receivedDate="2026-10-03 12:00:00 -0400" '
           'resourceFilePath="/clinical-records/Observation-hb.json"/>\n'
           '<ClinicalRecord type="HKClinicalTypeIdentifierLabResultRecord" identifier="2" sourceName="Hospital" '
           'fhirVersion="4.0.1" receivedDate="2026-10-02 12:00:00 -0400" '
           'resourceFilePath="/clinical-records/Observation-cr.json"/>\n</HealthData>\n')
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("apple_health_export/export.xml", xml)
        z.writestr("apple_health_export/clinical-records/Observation-hb.json",
                   _observation("718-7", "Hemoglobin", 13.1, "g/dL", "2026-10-03"))
        z.writestr("apple_health_export/clinical-records/Observation-cr.json",
                   _observation("2160-0", "Creatinine", 0.9, "mg/dL", "2026-10-02"))
    path.write_bytes(buf.getvalue())


def _upload(pg: Any, path: Path, stored: str) -> None:  # noqa: ANN401
    uploader = pg.locator('[data-testid="stFileUploader"]').filter(has_text="Apple Health export or lab CSV")
    uploader.locator('input[type="file"]').set_input_files(str(path))
    pg.get_by_text(stored).wait_for(timeout=LOAD_TIMEOUT_MS)
    settle(pg)


def test_patient_reach_uploads_judge_a_lab_limit_report_groups_contact_and_forget(page: Any, app_url: str, db: Any,  # noqa: F811
                                                                                   tmp_path: Path) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    export, labs = tmp_path / "export.zip", tmp_path / "labs.csv"
    _apple_health_zip(export)
    labs.write_bytes(LABS_CSV)

    page.goto(app_url + "/Assistant")
    settle(page)
    # "lung cancer": the trial's own condition (Lung Neoplasms), so the search for the diagnosis itself finds it
    page.get_by_label("Diagnosis *", exact=True).fill("lung cancer")
    page.get_by_label("How far can you travel? (miles)", exact=True).fill("10")
    page.get_by_label("Age *", exact=True).fill("62")
    page.get_by_text("Male", exact=True).click()
    page.get_by_label("Where do you live? *", exact=True).fill("New York, NY")
    page.get_by_role("button", name="Save my answers and continue").click()
    page.get_by_role("button", name="Search for trials").wait_for(timeout=LOAD_TIMEOUT_MS)
    settle(page)

    _upload(page, export, "Stored 12 values from export.zip")  # ten days of steps, two labs
    _upload(page, labs, "Stored 2 values from labs.csv")
    token = page.url.split("session=", 1)[1].split("&", 1)[0]
    stored = db.fetch_rows("SELECT key, source FROM app.health_records WHERE token = :t ORDER BY key",
                           {"t": storage_key(token)})
    assert sorted(r["key"] for r in stored) == ["anc", "creatinine", "hemoglobin", "platelets"] + ["steps"] * 10
    # The activity estimate (median of the ten days: 6,250 steps) says what it is not.
    page.get_by_text("About 6,200 steps a day (median of 10 days").wait_for()
    assert page.get_by_text("not an ECOG performance status score").count() == 1
    for secret in ("13.1", "hemoglobin", "210", "5200"):
        assert secret not in page.url.lower()
    page.locator('[data-testid="stDataFrame"]').first.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "reach_health_records.png"), full_page=True)

    for name in ("Search for trials", "Check my eligibility for these trials"):
        page.get_by_role("button", name=name).click(timeout=LOAD_TIMEOUT_MS)
        settle(page)
        assert exceptions(page) == [], name
    page.locator(f".st-key-asst_pick_{TRIAL}").get_by_text("Include in my report").click()  # that trial's card
    page.get_by_role("button", name="Use the 1 ticked trial for my report").click()
    settle(page)
    page.get_by_role("button", name="Write my report").click()
    page.get_by_text("Your report", exact=True).wait_for(timeout=LOAD_TIMEOUT_MS)
    settle(page)
    assert exceptions(page) == []

    frame = page.frame_locator("iframe").first
    frame.locator("body").wait_for(timeout=LOAD_TIMEOUT_MS)
    report_text = frame.locator("body").inner_text()
    # The lab limit is judged from the uploaded value, named with its unit and date (and converted to g/L).
    assert "Your haemoglobin of 13.1 g/dL on 2026-10-03 (131 g/L)" in report_text
    assert "A message to the study team" in report_text
    for group in GROUPS:
        assert group in report_text, group
    assert TRIAL in report_text
    # The downloaded report, opened on its own, for pictures of its parts (the page shows it in a scrolling frame).
    with page.expect_download() as download:
        page.get_by_role("button", name="Download report (HTML)").click()
    html = Path(download.value.path()).read_text(encoding="utf-8")
    assert "Your haemoglobin of 13.1 g/dL on 2026-10-03" in html and "5200" not in html  # labs used, steps not shown
    alone = page.context.new_page()
    try:
        alone.set_content(html)
        alone.locator("section#questions").first.screenshot(path=str(SHOTS / "reach_questions.png"))
        alone.get_by_text("A message to the study team").first.scroll_into_view_if_needed()
        alone.screenshot(path=str(SHOTS / "reach_report_message.png"))
        alone.get_by_text("Your haemoglobin of 13.1").first.scroll_into_view_if_needed()
        alone.screenshot(path=str(SHOTS / "reach_report_lab.png"))
    finally:
        alone.close()
    page.get_by_text("Messages to the study teams", exact=True).scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "reach_contact_message.png"))

    page.get_by_role("button", name="Forget this session").click()
    page.get_by_text("The session was forgotten").wait_for(timeout=LOAD_TIMEOUT_MS)
    settle(page)
    assert db.fetch_value("SELECT count(*) FROM app.health_records WHERE token = :t", {"t": storage_key(token)}) == 0
    assert db.fetch_value("SELECT count(*) FROM app.sessions WHERE token = :t", {"t": storage_key(token)}) == 0
    assert token not in page.url
