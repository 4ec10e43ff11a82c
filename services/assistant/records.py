"""Uploaded health records kept with an assistant session (app.health_records), and the lab values the rules use."""

from __future__ import annotations

import json
from collections.abc import Iterable

from services.assistant.session import AssistantSession
from services.assistant.store import SessionStore, storage_key, valid_token
from services.data.db import Database, load_sql
from services.eligibility.patient import LabValue
from services.healthdata import Observation, Parsed, latest_labs


class HealthRecordStore:
    """save / load / delete a session's uploaded records; they go with the session when it is forgotten or expires."""

    def __init__(self, db: Database | None = None) -> None:
        self.sessions = SessionStore(db)  # the records refer to the stored session, in the same database

    @property
    def db(self) -> Database:
        """The writable app database (resolved on first use)."""
        return self.sessions.db

    def save(self, session: AssistantSession, parsed: Parsed) -> int:
        """Store one upload, replacing the session's earlier upload from the same source; all rows or none."""
        self.sessions.save(session)  # the records refer to the stored session
        rows = json.dumps([o.as_row() for o in parsed.observations])
        key = storage_key(session.id)
        found = self.db.fetch_locked(f"health:{key}", load_sql("health_records_replace"),
                                     {"token": key, "source": parsed.source, "rows": rows}, timeout_ms=60_000)
        return int(found[0]["stored"])

    def load(self, token: str) -> list[Observation]:
        """The session's records, newest first (none for an unknown token)."""
        if not valid_token(token):
            return []
        rows = self.db.fetch_rows(load_sql("health_records_load"), {"token": storage_key(token)})
        return [Observation(r["kind"], r["key"], r["name"], float(r["value"]), r["unit"], float(r["std_value"]),
                            r["std_unit"], r["observed_on"], r["source"]) for r in rows]

    def delete(self, token: str) -> int:
        """Remove every record of the session; the number removed."""
        if not valid_token(token):
            return 0
        return self.db.execute(load_sql("health_records_delete"), {"token": storage_key(token)})


def lab_values(observations: Iterable[Observation]) -> tuple[LabValue, ...]:
    """The latest value of each uploaded lab, as the eligibility rules take them."""
    return tuple(LabValue(o.key, o.std_value, o.std_unit, o.observed_on.isoformat(), o.source, o.name)
                 for o in sorted(latest_labs(observations).values(), key=lambda o: o.key))
