"""Uploaded health records in app.health_records: round trip, all-or-nothing storing, and deletion with the session."""

from __future__ import annotations

import io
from datetime import date
from typing import Any

import pytest

from services import healthdata as h
from services.assistant import AssistantSession
from services.assistant.records import HealthRecordStore, lab_values
from services.assistant.store import SessionStore, storage_key
from services.eligibility.patient import LabValue
from services.errors import QueryFailed

TODAY = date(2026, 10, 5)
CSV = (b"date,name,value,unit\n2026-10-02,Creatinine,1.1,mg/dL\n2026-04-02,Creatinine,150,umol/L\n"
       b"2026-10-01,ALT,28,U/L\n2026-10-01,Steps,8100,\n")


def _rows(db: Any, token: str) -> list[tuple[Any, ...]]:
    return [tuple(r.values()) for r in db.fetch_rows(
        "SELECT source, kind, key, name, value, unit, std_value, std_unit, observed_on FROM app.health_records "
        "WHERE token = :t ORDER BY source, key, observed_on", {"t": storage_key(token)})]


def test_health_records_round_trip_and_latest_labs(db: Any) -> None:
    store = HealthRecordStore(db)
    session = AssistantSession()
    parsed = h.read_csv(CSV, today=TODAY)

    assert store.save(session, parsed) == 4

    assert SessionStore(db).load(session.id) == session  # storing saved the session the records belong to
    assert _rows(db, session.id) == [
        ("csv", "lab", "alt", "ALT", 28.0, "U/L", 28.0, "U/L", date(2026, 10, 1)),
        ("csv", "lab", "creatinine", "Creatinine", 150.0, "umol/L", pytest.approx(1.6968, abs=1e-4), "mg/dL",
         date(2026, 4, 2)),
        ("csv", "lab", "creatinine", "Creatinine", 1.1, "mg/dL", 1.1, "mg/dL", date(2026, 10, 2)),
        ("csv", "steps", "steps", "Steps", 8100.0, "", 8100.0, "steps", date(2026, 10, 1)),
    ]
    assert sorted(store.load(session.id), key=lambda o: (o.key, o.observed_on)) == sorted(
        parsed.observations, key=lambda o: (o.key, o.observed_on))
    assert lab_values(store.load(session.id)) == (
        LabValue("alt", 28.0, "U/L", "2026-10-01", "csv", "ALT"),
        LabValue("creatinine", 1.1, "mg/dL", "2026-10-02", "csv", "Creatinine"),
    )


def test_health_records_new_upload_replaces_same_source_only(db: Any) -> None:
    store = HealthRecordStore(db)
    session = AssistantSession()
    store.save(session, h.read_csv(CSV, today=TODAY))
    xml = (b'<HealthData locale="en"><Record type="HKQuantityTypeIdentifierStepCount" sourceName="iPhone" unit="count" '
           b'value="5000" startDate="2026-10-03 08:00:00 +0100"/></HealthData>')
    assert store.save(session, h.read_export_xml(io.BytesIO(xml), today=TODAY)) == 1

    assert store.save(session, h.read_csv(b"date,name,value,unit\n2026-10-03,AST,30,U/L\n", today=TODAY)) == 1

    assert [(r[0], r[2], r[4]) for r in _rows(db, session.id)] == [("apple-health", "steps", 5000.0), ("csv", "ast", 30.0)]


def test_health_records_store_is_all_or_nothing(db: Any) -> None:
    store = HealthRecordStore(db)
    session = AssistantSession()
    store.save(session, h.read_csv(CSV, today=TODAY))
    before = _rows(db, session.id)
    good = h.read_csv(b"date,name,value,unit\n2026-10-03,AST,30,U/L\n2026-10-03,ALT,31,U/L\n", today=TODAY)
    broken = h.Observation("lab", "Not A Key!", "x", 1.0, "U/L", 1.0, "U/L", date(2026, 10, 3), "csv")
    good.observations.append(broken)  # the table's CHECK refuses this row, so the statement stores none

    with pytest.raises(QueryFailed):
        store.save(session, good)

    assert _rows(db, session.id) == before


def test_health_records_go_with_the_session(db: Any) -> None:
    store, sessions = HealthRecordStore(db), SessionStore(db)
    forgotten, expired, removed, kept = (AssistantSession() for _ in range(4))
    for session in (forgotten, expired, removed, kept):
        store.save(session, h.read_csv(CSV, today=TODAY))

    assert sessions.delete(forgotten.id)
    db.execute("UPDATE app.sessions SET expires_at = now() - interval '1 minute' WHERE token = :t", {"t": storage_key(expired.id)})
    assert sessions.expire() >= 1
    assert store.delete(removed.id) == 4

    for gone in (forgotten, expired, removed):
        assert _rows(db, gone.id) == [] and store.load(gone.id) == []
    assert len(_rows(db, kept.id)) == 4
    assert sessions.load(removed.id) == removed  # removing the records keeps the session
    assert store.load("not a token") == [] and store.delete("../../etc") == 0


def test_health_records_are_not_readable_from_the_sql_console(db: Any) -> None:
    from services import console
    from services.errors import UnsafeQuery

    with pytest.raises(UnsafeQuery, match=r"app.health_records is outside the trial data"):
        console.run_query("SELECT * FROM app.health_records", db=db)
