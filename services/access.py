"""Who may open the app: the optional shared password (constant-time check, growing delay) and OIDC detection."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from services import settings
from services.errors import TrialLandscapeError
from services.limits import Visitor, duration

_log = logging.getLogger(__name__)

PASSWORD_KEY = "APP_PASSWORD"
FIRST_DELAY_S = 1.0
MAX_DELAY_S = 60.0


def configured_password(config: settings.Settings, secrets: Mapping[str, Any] | None = None) -> str | None:
    """The app password from the settings (APP_PASSWORD), else from Streamlit secrets; None when open."""
    value = config.app_password.get_secret_value() if config.app_password else ""
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
    """One key's failed tries in a row and when it may try again (monotonic seconds).

    The first `free` wrong tries cost no wait (a network address's flood cap, well above one person's tries);
    after `idle_s` without a wrong try the count starts again.
    """

    failures: int = 0
    next_try_at: float = 0.0
    free: int = 0
    idle_s: float = float("inf")
    last_failure_at: float = float("-inf")

    def wait_left(self, now: float) -> float:
        """Seconds until the next try is accepted (0 when it may try now)."""
        return max(0.0, self.next_try_at - now)

    def fail(self, now: float) -> float:
        """Count one wrong try at `now`; the wait it costs (0 within the free tries)."""
        if now - self.last_failure_at > self.idle_s:
            self.failures = 0
        self.failures += 1
        self.last_failure_at = now
        delay = delay_after(self.failures - self.free)
        self.next_try_at = now + delay
        return delay

    def attempt(self, given: str, expected: str, now: float) -> Verdict:
        """Check one try; a try made while the session must still wait is refused unchecked."""
        left = self.wait_left(now)
        if left > 0:
            return Verdict(False, left, f"Too many wrong tries. Wait {duration(left)} before trying again.")
        if password_matches(given, expected):
            self.failures = 0
            self.next_try_at = 0.0
            return Verdict(True, 0.0, "")
        delay = self.fail(now)
        return Verdict(False, delay, f"That password is not right. You can try again in {duration(delay)}.")


# wrong tries from one address before it waits too: a flood, not one person's typing
NETWORK_FREE_TRIES: int = settings.default("APP_PASSWORD_NETWORK_TRIES")
NETWORK_IDLE_S = 900.0  # an address's count starts again after 15 minutes without a wrong try
BROWSER_IDLE_S = 86_400.0


class SharedAttempts:
    """Wrong-password delays, kept in PostgreSQL (app.limit_failures) for every process and new session.

    The browser (its cookie) waits 1, 2, 4 … 60 s after each wrong try in a row. Its network address only
    caps a flood: its first `network_tries` wrong tries (per 15 idle minutes) cost nothing, then the address
    waits the same growing delays. So one person's wrong tries never hold up a colleague's browser behind
    the same address or proxy, and a client that drops its cookie after every try still meets the cap.
    When the database cannot be written the delays are kept in this process instead.
    """

    kind = "password"

    def __init__(self, db_factory: Callable[[], Any], clock: Callable[[], float] = time.monotonic,
                 network_tries: int = NETWORK_FREE_TRIES) -> None:
        self._db_factory = db_factory
        self._clock = clock
        self.network_tries = network_tries
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

    def _rules(self, visitor: Visitor) -> list[tuple[str, int, float]]:
        browser, network = visitor.keys()
        return [(browser, 0, BROWSER_IDLE_S), (network, self.network_tries, NETWORK_IDLE_S)]

    def _local_attempts(self, key: str, free: int, idle_s: float) -> Attempts:
        return self._local.setdefault(key, Attempts(free=free, idle_s=idle_s))

    def wait_left(self, visitor: Visitor) -> tuple[float, int]:
        """Seconds until this visitor's next try is accepted, and the browser's wrong tries in a row."""
        row = self._shared("limit_failures_wait", {"keys": list(visitor.keys())})
        if row is None:
            with self._lock:
                local = [self._local.get(key) or Attempts() for key, _, _ in self._rules(visitor)]
                now = self._clock()
                return max(a.wait_left(now) for a in local), local[0].failures
        return float(row.get("wait_s") or 0.0), int(row.get("browser_failures") or 0)

    def attempt(self, given: str, expected: str, visitor: Visitor) -> Verdict:
        """Check one try; a try made while the browser (or its flooding address) must wait is refused
        unchecked."""
        left, _ = self.wait_left(visitor)
        if left > 0:
            return Verdict(False, left, f"Too many wrong tries. Wait {duration(left)} before trying again.")
        rules = self._rules(visitor)
        if password_matches(given, expected):
            browser = rules[0][0]  # the address's count stays and decays on its own
            if self._shared("limit_failures_clear", {"keys": [browser]}) is None:
                with self._lock:
                    self._local.pop(browser, None)
            return Verdict(True, 0.0, "")
        row = self._shared("limit_failures_add", {
            "keys": [k for k, _, _ in rules], "frees": [f for _, f, _ in rules],
            "idles": [i for _, _, i in rules], "first_s": FIRST_DELAY_S, "max_s": MAX_DELAY_S})
        if row is None:
            with self._lock:
                now = self._clock()
                delay = max(self._local_attempts(*rule).fail(now) for rule in rules)
        else:
            delay = float(row.get("wait_s") or 0.0)
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


class MediaOwners:
    """Which browser session made each media file (downloads, the report), so /media/<id> goes only to the
    browser of a session that made it, and a session's files can be withdrawn at once ("Forget this session").

    Sessions are Streamlit's (one per tab), each bound to its browser token on every run (services.ui.gate).
    A file id no session owns any more is withdrawn: the media gate answers 404 although Streamlit keeps the
    bytes until its next clean-up.
    """

    def __init__(self, max_files: int = 20_000) -> None:
        self._browser: dict[str, str] = {}  # session id → browser token ("" when the browser sent no cookie)
        self._owners: dict[str, set[str]] = {}  # file id → session ids
        self._max_files = max_files
        self._lock = threading.Lock()

    def bind(self, session_id: str, browser_token: str) -> None:
        """Record which browser a session belongs to."""
        with self._lock:
            self._browser[session_id] = browser_token
            if len(self._browser) > 5 * self._max_files:
                owning = set().union(*self._owners.values()) if self._owners else set()
                self._browser = {k: v for k, v in self._browser.items() if k in owning or k == session_id}

    def add(self, session_id: str, file_id: str, *, like: str | None = None) -> None:
        """Record that a session made (or displays) a file; `like`: take the owners of that id instead
        (a deferred download's file belongs to whoever owned its placeholder)."""
        with self._lock:
            owners = set(self._owners.get(like, ())) if like is not None else {session_id}
            self._owners.setdefault(file_id, set()).update(owners)
            if len(self._owners) > self._max_files:  # the oldest go first (dicts keep insertion order)
                for old in list(self._owners)[: len(self._owners) - self._max_files]:
                    del self._owners[old]

    def may_serve(self, file_id: str, browser_token: str, *, gated: bool) -> bool | None:
        """True: serve it to this browser; False: withdrawn or another browser's; None: a file made outside
        any session (left to the instance-wide gate)."""
        with self._lock:
            owners = self._owners.get(file_id)
            if owners is None:
                return None
            tokens = {self._browser.get(s, "") for s in owners}
        if browser_token and browser_token in tokens:
            return True
        # A session without a browser token (XSRF protection turned off): nothing to compare on an open
        # instance.
        return "" in tokens and not gated

    def forget_session(self, session_id: str) -> list[str]:
        """Withdraw every file of a session; returns those no other session owns (to delete now)."""
        with self._lock:
            orphans = []
            for file_id, owners in self._owners.items():
                if session_id in owners:
                    owners.discard(session_id)
                    if not owners:
                        orphans.append(file_id)
            return orphans


media_owners = MediaOwners()


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


def client_address(peer: str, forwarded_for: str,
                   trusted: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]) -> str:
    """The visitor's address: the connection's peer, or — only when the peer is a trusted proxy — the
    nearest address in X-Forwarded-For that is not a trusted proxy itself (read from the right: entries
    further left were written by the client and can be forged)."""
    def is_trusted(address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in net for net in trusted)

    if not trusted or not is_trusted(peer):
        return peer
    nearest = peer
    for hop in reversed([h.strip() for h in (forwarded_for or "").split(",") if h.strip()]):
        try:
            ipaddress.ip_address(hop)
        except ValueError:
            return nearest  # a malformed entry: stop at the last address a trusted proxy vouched for
        if not is_trusted(hop):
            return hop
        nearest = hop
    return nearest


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
