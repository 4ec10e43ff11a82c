"""Access: the optional password gate (constant-time check, growing per-session delay) and OIDC detection."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from services import access

PASSWORD = "correct horse battery staple ✓"
PROJECT = Path(__file__).resolve().parent.parent


# ---- pure logic --------------------------------------------------------------------------------
def test_access_configured_password_prefers_environment_then_secrets():
    assert [
        access.configured_password({}, None),
        access.configured_password({"APP_PASSWORD": ""}, {}),
        access.configured_password({}, {"APP_PASSWORD": "from-secrets"}),
        access.configured_password({"APP_PASSWORD": "from-env"}, {"APP_PASSWORD": "from-secrets"}),
        access.configured_password({}, {"APP_PASSWORD": 1234}),
    ] == [None, None, "from-secrets", "from-env", None]


def test_access_password_matches_uses_compare_digest(monkeypatch):
    calls = []
    real = access.hmac.compare_digest

    def spy(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(access.hmac, "compare_digest", spy)
    assert [access.password_matches(PASSWORD, PASSWORD), access.password_matches("wrong", PASSWORD),
            access.password_matches("", PASSWORD)] == [True, False, False]
    assert calls == [(PASSWORD.encode(), PASSWORD.encode()), (b"wrong", PASSWORD.encode()), (b"", PASSWORD.encode())]


def test_access_delay_schedule_grows_and_caps():
    assert [access.delay_after(n) for n in range(0, 10)] == [0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0, 60.0]
    assert access.delay_after(10_000) == 60.0


def test_access_attempts_lock_out_then_admit():
    a = access.Attempts()
    got = [
        a.attempt("wrong", PASSWORD, now=100.0),     # 1st failure → wait 1 s
        a.attempt(PASSWORD, PASSWORD, now=100.5),    # refused unchecked: still waiting
        a.attempt("wrong", PASSWORD, now=101.0),     # 2nd failure → wait 2 s
        a.attempt("wrong", PASSWORD, now=102.0),     # refused unchecked (1 s left), not counted
        a.attempt("wrong", PASSWORD, now=103.0),     # 3rd failure → wait 4 s
        a.attempt(PASSWORD, PASSWORD, now=107.0),    # admitted, counter reset
    ]
    assert got == [
        access.Verdict(False, 1.0, "That password is not right. You can try again in 1 second."),
        access.Verdict(False, 0.5, "Too many wrong tries. Wait 1 second before trying again."),
        access.Verdict(False, 2.0, "That password is not right. You can try again in 2 seconds."),
        access.Verdict(False, 1.0, "Too many wrong tries. Wait 1 second before trying again."),
        access.Verdict(False, 4.0, "That password is not right. You can try again in 4 seconds."),
        access.Verdict(True, 0.0, ""),
    ]
    assert (a.failures, a.next_try_at) == (0, 0.0)


def test_access_fingerprint_changes_with_password_and_hides_it():
    fp = access.fingerprint(PASSWORD)
    assert fp == access.fingerprint(PASSWORD)
    assert fp != access.fingerprint(PASSWORD + "x")
    assert PASSWORD not in fp and len(fp) == 64


def test_access_oidc_config_reads_the_auth_section():
    shared = {"redirect_uri": "https://trials.example.org/oauth2callback", "cookie_secret": "s" * 32}
    provider = {"client_id": "id", "client_secret": "secret",
                "server_metadata_url": "https://login.example.org/.well-known/openid-configuration"}
    assert [
        access.oidc_config(None),
        access.oidc_config({}),
        access.oidc_config({**shared}),                            # no provider
        access.oidc_config({**provider}),                          # no redirect/cookie secret
        access.oidc_config({**shared, **provider}),                # default provider
        access.oidc_config({**shared, "microsoft": provider}),     # named provider
        access.oidc_config({**shared, "half": {"client_id": "x"}}),
    ] == [None, None, None, None, access.OidcConfig(None), access.OidcConfig("microsoft"), None]


# ---- the gate on a real page ---------------------------------------------------------------------
def _home(monkeypatch, password: str | None = PASSWORD) -> AppTest:
    if password is None:
        monkeypatch.delenv("APP_PASSWORD", raising=False)
    else:
        monkeypatch.setenv("APP_PASSWORD", password)
    return AppTest.from_file(str(PROJECT / "app.py"), default_timeout=120)


def _submit(at: AppTest, typed: str) -> AppTest:
    at.text_input(key="access_password").input(typed)
    next(b for b in at.button if b.label == "Enter").click()
    return at.run()


def test_access_gate_blocks_every_page_until_the_password(db, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    at = _home(monkeypatch).run()
    assert not at.exception
    assert [t.value for t in at.title] == ["🔒 Trial Landscape"]
    assert (len(at.metric), len(at.sidebar.children), dict(at.query_params)) == (0, 0, {})

    _submit(at, "not it")
    assert not at.exception
    assert [e.value for e in at.error] == ["That password is not right. You can try again in 1 second."]
    assert (len(at.metric), at.text_input(key="access_password").value) == (0, "")
    assert at.session_state["access_attempts"].failures == 1

    # A right password typed while the session still has to wait is refused without being checked.
    at.session_state["access_attempts"] = access.Attempts(failures=5, next_try_at=time.monotonic() + 100)
    _submit(at, PASSWORD)
    assert [e.value for e in at.error] == ["Too many wrong tries. Wait 100 seconds before trying again."]
    assert len(at.metric) == 0

    at.session_state["access_attempts"] = access.Attempts(failures=5, next_try_at=0.0)
    _submit(at, PASSWORD)
    assert not at.exception
    assert [t.value for t in at.title] == ["🧭 Trial Landscape"]
    assert [m.label for m in at.metric] == ["Studies", "Trial sites", "Sites with coordinates", "Newest update"]
    assert at.session_state["access_attempts"].failures == 0
    # Never in the URL, the widgets or the logs.
    assert all(PASSWORD not in v for values in at.query_params.values() for v in values)
    assert PASSWORD not in caplog.text and "not it" not in caplog.text
    assert PASSWORD not in repr(at.session_state["access_key"])


def test_access_gate_relocks_when_the_password_changes(db, monkeypatch):
    at = _home(monkeypatch).run()
    _submit(at, PASSWORD)
    assert [t.value for t in at.title] == ["🧭 Trial Landscape"]
    monkeypatch.setenv("APP_PASSWORD", "a new one")
    at.run()
    assert [t.value for t in at.title] == ["🔒 Trial Landscape"]


def test_access_gate_reads_the_password_from_secrets(db, monkeypatch):
    at = _home(monkeypatch, password=None)
    at.secrets["APP_PASSWORD"] = "from secrets"
    at.run()
    assert [t.value for t in at.title] == ["🔒 Trial Landscape"]
    _submit(at, "from secrets")
    assert [t.value for t in at.title] == ["🧭 Trial Landscape"]


def test_access_open_when_nothing_is_configured(db, monkeypatch):
    at = _home(monkeypatch, password=None).run()
    assert not at.exception
    assert [t.value for t in at.title] == ["🧭 Trial Landscape"]


def test_access_oidc_section_uses_streamlit_login_instead_of_the_password(db, monkeypatch):
    at = _home(monkeypatch)
    at.secrets["auth"] = {"redirect_uri": "http://localhost:8501/oauth2callback", "cookie_secret": "c" * 32,
                          "client_id": "id", "client_secret": "secret",
                          "server_metadata_url": "https://login.example.org/.well-known/openid-configuration"}
    at.run()
    assert not at.exception
    assert [t.value for t in at.title] == ["🔒 Trial Landscape"]
    assert [b.label for b in at.button] == ["Sign in"]
    assert [len(at.text_input), len(at.metric)] == [0, 0]


@pytest.mark.parametrize("page", ["pages/6_Data.py"])
def test_access_gate_covers_other_pages(db, monkeypatch, page):
    monkeypatch.setenv("APP_PASSWORD", PASSWORD)
    at = AppTest.from_file(str(PROJECT / page), default_timeout=120).run()
    assert not at.exception
    assert [t.value for t in at.title] == ["🔒 Trial Landscape"]
    assert len(at.metric) == 0
