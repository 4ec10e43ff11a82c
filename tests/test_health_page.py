"""The Assistant page's Health records section with AppTest: upload a CSV, see it, use it, remove it, forget it."""

from __future__ import annotations

import io
import zipfile
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from services import inert
from services.assistant import AssistantSession
from services.assistant.store import storage_key
from tests.conftest import PROJECT
from tests.test_assistant_page import _click, _fill_guided_form, _ok

PAGE = str(PROJECT / "app_pages" / "assistant.py")
LABS = (b"date,name,value,unit\n"
        b"2026-10-02,HbA1c,8.1,%\n"
        b"2026-03-02,HbA1c,9.4,%\n"
        b"2026-10-02,Creatinine,88,umol/L\n"
        b"2026-10-02,ALT,28,mmol/mol\n"
        b"2026-10-02,Steps,7400,\n")


def _stored(db: Any, token: str) -> list[tuple[Any, ...]]:
    return [tuple(r.values()) for r in db.fetch_rows(
        "SELECT key, value, unit, observed_on::text FROM app.health_records WHERE token = :t ORDER BY key, observed_on",
        {"t": storage_key(token)})]


def _upload(at: AppTest, name: str, data: bytes, mime: str) -> AppTest:
    at.file_uploader(key="health_upload").set_value((name, data, mime))
    return at.run()


def test_health_page_upload_show_use_and_remove(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    at = AppTest.from_file(PAGE, default_timeout=240).run()
    _ok(at)
    assert [s.value for s in at.subheader][:2] == ["About you", "Health records (optional)"]
    assert at.file_uploader(key="health_upload").label == "Apple Health export or lab CSV"
    assert "health_template" in [b.key for b in at.get("download_button")]

    _upload(at, "labs.csv", LABS, "text/csv")

    _ok(at)
    session: AssistantSession = at.session_state["asst_session"]
    assert [s.value for s in at.success] == [inert.md(
        "Stored 4 values from labs.csv (they replace your earlier CSV upload, if any). 1 row was not stored; see below.")]
    assert [t.value for t in at.text] == [
        "Row 5: “mmol/mol” is not a unit for ALT; write the value in U/L, IU/L, ukat/l."]
    assert _stored(db, session.id) == [("creatinine", 88.0, "umol/L", "2026-10-02"), ("hba1c", 9.4, "%", "2026-03-02"),
                                       ("hba1c", 8.1, "%", "2026-10-02"), ("steps", 7400.0, "", "2026-10-02")]
    [table] = [d.value for d in at.dataframe if "Standard unit" in d.value.columns]
    assert list(table["Date"]) == ["2026-10-02", "2026-10-02", "2026-03-02", "2026-10-02"]
    assert list(table["Test"]) == ["creatinine", "HbA1c", "HbA1c", "daily steps"]
    assert list(table["Unit"]) == ["umol/L", "%", "%", ""]
    assert dict(at.query_params) == {"session": session.id}  # the session link, nothing of the records
    assert [i.value for i in at.info if "step counts" in i.value] == [inert.md(
        "Only 1 day of step counts in the 30 days to 2026-10-02: too few to estimate how active you are.")]
    assert session.patient_profile.get("ecog") is None

    # The eligibility check reads the latest HbA1c with its date.
    _fill_guided_form(at)
    next(b for b in at.button if b.label == "Save my answers and continue").click()
    at.run()
    _ok(at)
    _click(at, "g_search")
    _ok(at)
    assert at.file_uploader(key="health_upload") is not None  # still offered before the check
    _click(at, "g_match")
    _ok(at)
    reasons = [c["reason"] for m in session.matched_trials for c in m["criteria"]]
    dated = [r for r in reasons if r.startswith("Your HbA1c of 8.1 % on 2026-10-02 ")]
    assert dated, "no criterion was judged from the uploaded HbA1c"
    assert not any("9.4 %" in r for r in reasons)  # the older value is never used

    # Removing the records empties the table and the database; the session stays.
    assert session.phase == "selection"
    _click(at, "health_remove")
    _ok(at)
    assert _stored(db, session.id) == []
    assert [s.value for s in at.success] == [inert.md("Removed 4 stored values from this session.")]
    assert not [d for d in at.dataframe if "Standard unit" in d.value.columns]


def test_health_page_refuses_bad_files_and_forgets_with_the_session(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    at = AppTest.from_file(PAGE, default_timeout=240).run()
    hostile = io.BytesIO()
    with zipfile.ZipFile(hostile, "w") as zf:
        zf.writestr("apple_health_export/export.xml", b'<HealthData locale="en"/>')
        info = zipfile.ZipInfo("x")
        info.filename = "../evil.xml"
        zf.writestr(info, b"<x/>")

    _upload(at, "export.zip", hostile.getvalue(), "application/zip")

    session: AssistantSession = at.session_state["asst_session"]
    assert [e.value for e in at.error] == [inert.md(
        "The zip contains a file name that points outside the archive (“../evil.xml”); it was refused and nothing was "
        "stored. Upload the export.zip the Health app made.")]
    assert _stored(db, session.id) == []
    _upload(at, "export.xml", b"this is not xml", "text/xml")
    assert "it is not XML" in at.error[0].value and _stored(db, session.id) == []

    _upload(at, "labs.csv", LABS, "text/csv")
    assert len(_stored(db, session.id)) == 4
    _click(at, "asst_forget")
    _ok(at)
    assert _stored(db, session.id) == []
    assert db.fetch_value("SELECT count(*) FROM app.sessions WHERE token = :t", {"t": storage_key(session.id)}) == 0
    assert at.session_state["asst_session"].id != session.id
    assert at.file_uploader(key="health_upload").value is None  # the file is not carried into the new session
    assert "uploaded health records are deleted" in at.warning[0].value


def test_health_page_one_stored_value_is_said_in_the_singular(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # With one value stored the page said "1 stored values" and, after removal, "Removed 1 stored values".
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    at = AppTest.from_file(PAGE, default_timeout=240).run()
    _upload(at, "one.csv", b"date,name,value,unit\n2026-10-02,HbA1c,8.1,%\n", "text/csv")
    _ok(at)
    captions = " ".join(c.value for c in at.caption)
    assert "1 stored value. When you check eligibility, the latest value of your 1 lab test is compared" in captions
    _click(at, "health_remove")
    _ok(at)
    assert [s.value for s in at.success] == [inert.md("Removed 1 stored value from this session.")]
