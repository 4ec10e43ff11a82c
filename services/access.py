"""Who may open the app: the optional shared password (constant-time check, growing delay) and OIDC detection."""

from __future__ import annotations

import hashlib
import hmac
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from services.errors import TrialLandscapeError
from services.limits import Visitor, duration

_log = logging.getLogger(__name__)

PASSWORD_KEY = "APP_PASSWORD"
FIRST_DELAY_S = 1.0
MAX_DELAY_S = 60.0


def configured_password(env: Mapping[str, str], secrets: Mapping[str, Any] | None = None) -> str | None:
    """The app password from the environment, else from Streamlit secrets; None when the app is open."""
    value = env.get(PASSWORD_KEY, "")
    if not value and secrets is not None:
        raw = secrets.get(PASSWORD_KEY)
        value = raw if isinstance(raw, str) else ""
    return value or None


def password_matches(given: str, expected: str) -> bool:
    """Compare a typed password with the configured one in constant time (UTF-8 bytes)."""
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def fingerprint(password: str) -> str:
    """A digest that marks a session as admitted under this password (a changed password re-locks)."""
    return hashlib.sha256(b"trial-landscape-access:" + password.encode("utf-8")).hexdigest()


def delay_after(failures: int) -> float:
    """Seconds a session must wait after its n-th failed try in a row: 1, 2, 4, 8 … capped at 60."""
    if failures <= 0:
        return 0.0
    return min(MAX_DELAY_S, FIRST_DELAY_S * 2 ** min(failures - 1, 16))


@dataclass(frozen=True)
class Verdict:
    """Outcome of one try: admitted, or refused with how long to wait before the next try."""

    admitted: bool
    wait_s: float
    message: str


@dataclass
class Attempts:
    """One browser session's failed tries in a row and when it may try again (monotonic seconds)."""

    failures: int = 0
    next_try_at: float = 0.0

    def wait_left(self, now: float) -> float:
        """Seconds until the next try is accepted (0 when it may try now)."""
        return max(0.0, self.next_try_at - now)

    def attempt(self, given: str, expected: str, now: float) -> Verdict:
        """Check one try; a try made while the session must still wait is refused unchecked."""
        left = self.wait_left(now)
        if left > 0:
            return Verdict(False, left, f"Too many wrong tries. Wait {duration(left)} before trying again.")
        if password_matches(given, expected):
            self.failures = 0
            self.next_try_at = 0.0
            return Verdict(True, 0.0, "")
        self.failures += 1
        delay = delay_after(self.failures)
        self.next_try_at = now + delay
        return Verdict(False, delay, f"That password is not right. You can try again in {duration(delay)}.")


class SharedAttempts:
    """Wrong-password delays for every browser and network address, kept in PostgreSQL (app.limit_failures).

    A try waits for the longest delay of its browser and its network address, and a wrong one grows both,
    so a fresh browser session, a new cookie or another app process faces the same delay as the last try.
    When the database cannot be written the delays are kept in this process instead.
    """

    kind = "password"

    def __init__(self, db_factory: Callable[[], Any], clock: Callable[[], float] = time.monotonic) -> None:
        self._db_factory = db_factory
        self._clock = clock
        self._local: dict[str, Attempts] = {}
        self._lock = threading.Lock()

    def _shared(self, name: str, params: dict[str, Any]) -> dict[str, Any] | None:
        from services.data.db import load_sql

        try:
            rows = self._db_factory().fetch_locked(f"app.limit_failures:{self.kind}", load_sql(name),
                                                   {"kind": self.kind, **params})
        except TrialLandscapeError as err:
            _log.warning("shared password delays unavailable (%s); keeping them in this process", err)
            return None
        return rows[0] if rows else {}

    def wait_left(self, visitor: Visitor) -> tuple[float, int]:
        """Seconds until this visitor's next try is accepted, and the wrong tries in a row behind it."""
        row = self._shared("limit_failures_wait", {"keys": list(visitor.keys())})
        if row is None:
            with self._lock:
                local = [self._local.get(k, Attempts()) for k in visitor.keys()]
                now = self._clock()
                return max(a.wait_left(now) for a in local), max(a.failures for a in local)
        return float(row.get("wait_s") or 0.0), int(row.get("failures") or 0)

    def attempt(self, given: str, expected: str, visitor: Visitor) -> Verdict:
        """Check one try; a try made while the visitor must still wait is refused unchecked."""
        left, _ = self.wait_left(visitor)
        if left > 0:
            return Verdict(False, left, f"Too many wrong tries. Wait {duration(left)} before trying again.")
        keys = list(visitor.keys())
        if password_matches(given, expected):
            if self._shared("limit_failures_clear", {"keys": keys}) is None:
                with self._lock:
                    for key in keys:
                        self._local.pop(key, None)
            return Verdict(True, 0.0, "")
        row = self._shared("limit_failures_add", {"keys": keys, "first_s": FIRST_DELAY_S, "max_s": MAX_DELAY_S})
        if row is None:
            with self._lock:
                now = self._clock()
                verdicts = [self._local.setdefault(k, Attempts()).attempt(given, expected, now) for k in keys]
            delay = max(v.wait_s for v in verdicts)
        else:
            delay = float(row.get("wait_s") or FIRST_DELAY_S)
        return Verdict(False, delay, f"That password is not right. You can try again in {duration(delay)}.")


ADMISSION_TTL_S = 12 * 3600.0


class Admissions:
    """Browsers admitted through the gate in this process, by a digest of their browser token, for ADMISSION_TTL_S.

    Downloads are served over plain HTTP (/media/…), outside any Streamlit session; the server's media gate
    (app.py) lets a request through only when its browser token was admitted here, so a download URL is
    useless to another client or a browser that never signed in. `active` says whether this instance has a gate.
    """

    def __init__(self, ttl_s: float = ADMISSION_TTL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self._clock = clock
        self._until: dict[str, float] = {}
        self._lock = threading.Lock()
        self.active = False

    def admit(self, browser_token: str) -> None:
        """Mark a browser (its token) as signed in for the next ttl_s seconds."""
        if not browser_token:
            return
        now = self._clock()
        with self._lock:
            self.active = True
            self._until[_token_digest(browser_token)] = now + self.ttl_s
            if len(self._until) > 50_000:  # drop expired entries once in a while
                self._until = {k: t for k, t in self._until.items() if t > now}

    def admitted(self, browser_token: str) -> bool:
        """Whether a browser (its token) signed in within the last ttl_s seconds."""
        if not browser_token:
            return False
        with self._lock:
            return self._until.get(_token_digest(browser_token), 0.0) > self._clock()


def _token_digest(token: str) -> str:
    return hashlib.sha256(b"trial-landscape-admitted:" + token.encode("utf-8")).hexdigest()


admissions = Admissions()


XSRF_COOKIE = "_streamlit_xsrf"  # Streamlit's XSRF cookie: the download gate (app.py) and the page gate read it


def browser_token(xsrf_cookie: str) -> str:
    """The stable token inside Streamlit's XSRF cookie ("2|mask|masked_token|timestamp": the mask changes with
    every page load, the token stays for the browser's life); "" when there is none."""
    parts = (xsrf_cookie or "").split("|")
    if len(parts) >= 3 and parts[0] == "2":
        try:
            mask, masked = bytes.fromhex(parts[1]), bytes.fromhex(parts[2])
        except ValueError:
            return ""
        if not mask or not masked:
            return ""
        return bytes(t ^ mask[i % len(mask)] for i, t in enumerate(masked)).hex()
    return xsrf_cookie or ""


@dataclass(frozen=True)
class OidcConfig:
    """A usable [auth] section of Streamlit secrets; provider None means the default (unnamed) one."""

    provider: str | None


_SHARED_KEYS = ("redirect_uri", "cookie_secret")
_PROVIDER_KEYS = ("client_id", "client_secret", "server_metadata_url")


def oidc_config(auth: Mapping[str, Any] | None) -> OidcConfig | None:
    """Which OIDC provider Streamlit's st.login should use, or None when [auth] is absent or incomplete."""
    if not auth or not all(auth.get(k) for k in _SHARED_KEYS):
        return None
    if all(auth.get(k) for k in _PROVIDER_KEYS):
        return OidcConfig(None)
    for name, section in auth.items():
        if isinstance(section, Mapping) and all(section.get(k) for k in _PROVIDER_KEYS):
            return OidcConfig(str(name))
    return None
