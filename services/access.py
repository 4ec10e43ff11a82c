"""Who may open the app: the optional shared password (constant-time check, growing delay) and OIDC detection."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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
            return Verdict(False, left, f"Too many wrong tries. Wait {_seconds(left)} before trying again.")
        if password_matches(given, expected):
            self.failures = 0
            self.next_try_at = 0.0
            return Verdict(True, 0.0, "")
        self.failures += 1
        delay = delay_after(self.failures)
        self.next_try_at = now + delay
        return Verdict(False, delay, f"That password is not right. You can try again in {_seconds(delay)}.")


def _seconds(value: float) -> str:
    whole = max(1, int(-(-value // 1)))
    return f"{whole} second{'s' if whole != 1 else ''}"


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
