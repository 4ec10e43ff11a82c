"""Assistant sessions kept in the app schema (app.sessions), so a restart or another server process resumes them.

A session is stored under the SHA-256 of its token (storage_key), never the token itself: whoever reads the table
(a backup, the database's own admin) cannot open a patient's session from it. The stored JSON's id is that key too;
the token is put back from the link on load. Rows from before, stored under the raw token, are deleted by
sql/schema/075_app_session_keys.sql, so their links open a new session ("No saved session was found").
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import re
import threading
import time
from dataclasses import dataclass

from services import settings
from services.assistant.session import AssistantSession
from services.data import runtime
from services.data.db import Database, load_sql
from services.errors import BadInput

EXPIRE_EVERY_S = 3600.0
TOKEN_RE = re.compile(r"[A-Za-z0-9_-]{43,128}")
# JSON's escape for the NUL character, which PostgreSQL's jsonb cannot store (only when the backslash
# before it is not itself escaped).
_NUL_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")

_log = logging.getLogger(__name__)
_expired_at = 0.0
_expire_lock = threading.Lock()


def session_days() -> int:
    """How long an unused session is kept: ASSISTANT_SESSION_DAYS (1-3650), default 30."""
    return settings.current().assistant_session_days


def valid_token(token: str | None) -> bool:
    """Whether text has the shape of a session token (URL-safe, at least 256 bits' worth of characters)."""
    return bool(token) and TOKEN_RE.fullmatch(token or "") is not None


def storage_key(token: str) -> str:
    """What a session (and its health records) is stored under: the token's SHA-256, 64 hex digits."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class OpenedSession:
    """The session a page should show: resumed from the store or fresh, with a notice when a link failed."""

    session: AssistantSession
    resumed: bool
    notice: str | None = None


class SessionStore:
    """save / load / delete / expire assistant sessions in app.sessions (default: runtime.get_app_db())."""

    def __init__(self, db: Database | None = None, *, days: int | None = None) -> None:
        self._db = db
        self.days = days if days is not None else session_days()

    @property
    def db(self) -> Database:
        """The writable app database (resolved on first use)."""
        if self._db is None:
            self._db = runtime.get_app_db()
        return self._db

    def save(self, session: AssistantSession) -> None:
        """Store the whole session under its token; the lifetime restarts from now."""
        key = storage_key(session.id)
        data = _NUL_ESCAPE.sub(r"\1\\ufffd", dataclasses.replace(session, id=key).to_json())
        self.db.execute(load_sql("assistant_session_save"), {"token": key, "data": data, "days": self.days})

    def load(self, token: str) -> AssistantSession | None:
        """The stored session, or None when unknown or expired; corrupt data raises BadInput saying where."""
        if not valid_token(token):
            return None
        key = storage_key(token)
        rows = self.db.fetch_rows(load_sql("assistant_session_load"), {"token": key})
        if not rows:
            return None
        session = AssistantSession.from_json(rows[0]["data"])
        if session.id != key:
            raise BadInput("Assistant session data is corrupt: $.id does not match the key it is stored under.")
        session.id = token
        return session

    def delete(self, token: str) -> bool:
        """Forget a session; True when something was deleted."""
        if not valid_token(token):
            return False
        return self.db.execute(load_sql("assistant_session_delete"), {"token": storage_key(token)}) > 0

    def expire(self) -> int:
        """Delete every session past its lifetime; the number deleted."""
        return self.db.execute(load_sql("assistant_session_expire"))

    def expire_now_and_then(self) -> None:
        """Run expire() at most once an hour per process (called when sessions are opened)."""
        global _expired_at
        with _expire_lock:
            if time.monotonic() - _expired_at < EXPIRE_EVERY_S and _expired_at:
                return
            _expired_at = time.monotonic()
        removed = self.expire()
        if removed:
            _log.info("removed %d expired assistant sessions", removed)

    def open(self, token: str | None) -> OpenedSession:
        """The session behind a link, or a fresh one (with a notice when the link could not be used)."""
        self.expire_now_and_then()
        if not token:
            return OpenedSession(AssistantSession(), False)
        if not valid_token(token):
            return OpenedSession(AssistantSession(), False,
                                 "That session link is not valid (the code is incomplete), so a new session was started.")
        try:
            session = self.load(token)
        except BadInput as exc:
            _log.warning("stored assistant session %s… is unreadable: %s", token[:8], exc)
            return OpenedSession(AssistantSession(), False,
                                 "The saved session behind that link could not be read (its stored data is damaged), "
                                 "so a new session was started. Other sessions are not affected.")
        if session is None:
            return OpenedSession(AssistantSession(), False,
                                 f"No saved session was found for that link. Sessions are kept for {self.days} days "
                                 "after their last use, or until someone chose to forget them. A new session was started.")
        return OpenedSession(session, True)
