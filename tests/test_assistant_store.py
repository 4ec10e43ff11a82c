"""Assistant sessions in app.sessions: round trip, lifetime, forgetting, corrupt rows, another process."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from services.assistant import AssistantSession
from services.assistant.store import SessionStore, session_days, storage_key, valid_token
from services.settings import SettingsError
from tests.conftest import PROJECT

SCHEMA = PROJECT / "sql" / "schema"


def _session(**changes: Any) -> AssistantSession:
    session = AssistantSession(phase="matching")
    session.flags["intake_complete"] = True
    session.patient_profile = {"diagnosis": "type 2 diabetes", "age": 55, "sex": "female", "latitude": 29.76328,
                               "longitude": -95.36327, "travel_radius_miles": 100.0}
    session.intake_answers = {"patient_said": ["I have type 2 diabetes"], "location": "Houston, TX"}
    session.filters = {"condition": "type 2 diabetes", "age": 55, "radius": 100.0}
    session.messages = [
        {"role": "user", "content": [{"type": "text", "text": "Hello"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Hi, I am the trial guide."},
                                          {"type": "tool_use", "id": "toolu_1", "name": "emit_status",
                                           "input": {"message": "working"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "{}"}]},
    ]
    session.candidates = {"NCT07064473": {"nct_id": "NCT07064473", "title": "EASi-PROTKT", "strategies": ["exact"]}}
    session.matched_trials = [{"nct_id": "NCT07064473", "fit_score": 71, "verdict": "uncertain", "criteria": []}]
    session.seen_nct_ids = ["NCT07064473"]
    for key, value in changes.items():
        setattr(session, key, value)
    return session


def _expires_at(db: Any, token: str) -> datetime:
    return db.fetch_value("SELECT expires_at FROM app.sessions WHERE token = :t", {"t": storage_key(token)})  # type: ignore[no-any-return]


def test_assistant_store_round_trip_is_exact(db: Any) -> None:
    store = SessionStore(db)
    session = _session()

    store.save(session)
    loaded = store.load(session.id)

    assert loaded == session
    assert loaded is not session


def test_assistant_store_save_replaces_and_extends(db: Any) -> None:
    store = SessionStore(db, days=30)
    session = _session()
    store.save(session)
    db.execute("UPDATE app.sessions SET expires_at = now() + interval '1 day' WHERE token = :t", {"t": storage_key(session.id)})
    session.phase = "selection"
    session.selected_nct_ids = ["NCT07064473"]

    store.save(session)

    assert store.load(session.id) == session
    assert db.fetch_value("SELECT count(*) FROM app.sessions WHERE token = :t", {"t": storage_key(session.id)}) == 1
    left = _expires_at(db, session.id) - datetime.now(UTC)
    assert timedelta(days=29, hours=23) < left <= timedelta(days=30)


def test_assistant_store_lifetime_from_env(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSISTANT_SESSION_DAYS", "7")
    store = SessionStore(db)
    session = _session()

    store.save(session)

    left = _expires_at(db, session.id) - datetime.now(UTC)
    assert (store.days, timedelta(days=6, hours=23) < left <= timedelta(days=7)) == (7, True)


@pytest.mark.parametrize(("raw", "days"), [("", 30), ("0", None), ("abc", None), ("90", 90), ("99999", None)])
def test_assistant_store_session_days_reads_env(monkeypatch: pytest.MonkeyPatch, raw: str,
                                                days: int | None) -> None:
    monkeypatch.setenv("ASSISTANT_SESSION_DAYS", raw)
    if days is None:  # a bad value is refused with its name, never replaced by the default
        with pytest.raises(SettingsError, match="^ASSISTANT_SESSION_DAYS="):
            session_days()
    else:
        assert session_days() == days


def test_assistant_store_expired_sessions_are_gone(db: Any) -> None:
    store = SessionStore(db)
    old, fresh = _session(), _session()
    store.save(old)
    store.save(fresh)
    db.execute("UPDATE app.sessions SET expires_at = now() - interval '1 minute' WHERE token = :t", {"t": storage_key(old.id)})

    assert store.load(old.id) is None
    removed = store.expire()

    assert removed >= 1
    assert db.fetch_value("SELECT count(*) FROM app.sessions WHERE token = :t", {"t": storage_key(old.id)}) == 0
    assert store.load(fresh.id) == fresh


def test_assistant_store_forget_deletes(db: Any) -> None:
    store = SessionStore(db)
    session = _session()
    store.save(session)

    assert store.delete(session.id) is True
    assert store.load(session.id) is None
    assert store.delete(session.id) is False
    opened = store.open(session.id)
    assert (opened.resumed, opened.session.id != session.id) == (False, True)
    assert opened.notice is not None and opened.notice.startswith("No saved session was found for that link.")


def test_assistant_store_keeps_only_a_hash_of_the_token(db: Any) -> None:
    store = SessionStore(db)
    session = _session()
    store.save(session)

    rows = db.fetch_rows("SELECT token, data::text AS data FROM app.sessions WHERE data::text LIKE :raw OR token = :raw",
                         {"raw": f"%{session.id}%"})
    assert rows == []  # neither the key nor the stored JSON holds the token a link carries
    key = storage_key(session.id)
    assert key == hashlib.sha256(session.id.encode()).hexdigest()
    assert db.fetch_value("SELECT data->>'id' FROM app.sessions WHERE token = :k", {"k": key}) == key
    assert store.load(session.id) == session  # the token comes back from the link


def test_assistant_store_a_session_stored_under_its_raw_token_no_longer_resolves(db: Any) -> None:
    store = SessionStore(db)
    old = _session()
    db.execute("INSERT INTO app.sessions (token, data, expires_at) VALUES (:t, CAST(:d AS jsonb), now() + interval '1 day')",
               {"t": old.id, "d": old.to_json()})  # as stored before tokens were hashed
    kept = _session()
    store.save(kept)

    db.execute_script((SCHEMA / "075_app_session_keys.sql").read_text(encoding="utf-8"))

    assert db.fetch_value("SELECT count(*) FROM app.sessions WHERE token = :t", {"t": old.id}) == 0
    opened = store.open(old.id)
    assert not opened.resumed and (opened.notice or "").startswith("No saved session was found for that link.")
    assert store.load(kept.id) == kept


def test_assistant_store_corrupt_row_opens_fresh_and_spares_others(db: Any) -> None:
    store = SessionStore(db)
    good = _session()
    store.save(good)
    broken = AssistantSession().id
    db.execute("INSERT INTO app.sessions (token, data, expires_at) VALUES (:t, CAST(:d AS jsonb), now() + interval '1 day')",
               {"t": storage_key(broken), "d": json.dumps({"version": 1, "id": storage_key(broken), "phase": "nowhere"})})

    opened = store.open(broken)

    assert (opened.resumed, opened.session.phase, opened.session.messages) == (False, "intake", [])
    assert opened.session.id not in (broken, good.id)
    assert opened.notice == ("The saved session behind that link could not be read (its stored data is damaged), so a "
                             "new session was started. Other sessions are not affected.")
    assert store.open(good.id) == type(opened)(good, True, None)


def test_assistant_store_row_under_wrong_token_is_corrupt(db: Any) -> None:
    store = SessionStore(db)
    session = _session()
    other = AssistantSession().id
    db.execute("INSERT INTO app.sessions (token, data, expires_at) VALUES (:t, CAST(:d AS jsonb), now() + interval '1 day')",
               {"t": storage_key(other), "d": dataclasses.replace(session, id=storage_key(session.id)).to_json()})

    opened = store.open(other)

    assert opened.resumed is False and opened.notice is not None and "damaged" in opened.notice


@pytest.mark.parametrize("token", ["abc", "x" * 42, "a" * 43 + "!", "' OR 1=1 --" + "a" * 40])
def test_assistant_store_malformed_link_never_reaches_the_database(db: Any, token: str) -> None:
    store = SessionStore(db)
    assert valid_token(token) is False
    opened = store.open(token)
    assert (opened.resumed, opened.notice) == (
        False, "That session link is not valid (the code is incomplete), so a new session was started.")
    assert store.load(token) is None


def test_assistant_store_token_has_256_bits() -> None:
    tokens = {AssistantSession().id for _ in range(50)}
    assert len(tokens) == 50 and all(valid_token(t) and len(t) == 43 for t in tokens)


def test_assistant_store_nul_character_is_kept_as_replacement(db: Any) -> None:
    store = SessionStore(db)
    session = _session()
    session.intake_answers["patient_said"] = ["broken\x00text", "a literal \\u0000 stays"]

    store.save(session)

    loaded = store.load(session.id)
    assert loaded is not None
    assert loaded.intake_answers["patient_said"] == ["broken\ufffdtext", "a literal \\u0000 stays"]


def test_assistant_store_another_process_resumes(db: Any) -> None:
    store = SessionStore(db)
    session = _session()
    store.save(session)
    script = (
        "import json, sys\n"
        "from services.assistant.store import SessionStore\n"
        "s = SessionStore().load(sys.argv[1])\n"
        "print(s.to_json())\n"
    )
    env = dict(os.environ, PYTHONPATH=str(PROJECT))

    out = subprocess.run([sys.executable, "-c", script, session.id], capture_output=True, text=True, env=env,
                         cwd=PROJECT, timeout=300, check=True)

    assert AssistantSession.from_json(out.stdout.strip().splitlines()[-1]) == session
