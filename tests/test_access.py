"""Access: the optional password gate (constant-time check, growing per-session delay) and OIDC detection."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from services import access, limits, settings

PASSWORD = "correct horse battery staple ✓"
PROJECT = Path(__file__).resolve().parent.parent


# ---- pure logic --------------------------------------------------------------------------------
def test_access_configured_password_prefers_environment_then_secrets():
    assert [
        access.configured_password(settings.read({}), None),
        access.configured_password(settings.read({"APP_PASSWORD": ""}), {}),
        access.configured_password(settings.read({}), {"APP_PASSWORD": "from-secrets"}),
        access.configured_password(settings.read({"APP_PASSWORD": "from-env"}),
                                   {"APP_PASSWORD": "from-secrets"}),
        access.configured_password(settings.read({}), {"APP_PASSWORD": 1234}),
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
    return AppTest.from_file(str(PROJECT / "navigation.py"), default_timeout=120)


def _shared_tries(db, browsers: list[str], network_tries: int = access.NETWORK_FREE_TRIES,
                  ) -> list[tuple[bool, float, int]]:
    """Wrong tries from the given browser tokens (one network address), each made as soon as allowed."""
    tries = access.SharedAttempts(lambda: db, network_tries=network_tries)
    seen = []
    for token in browsers:
        visitor = limits.Visitor.from_values(token, "203.0.113.7")
        left, _ = tries.wait_left(visitor)
        verdict = tries.attempt("wrong", PASSWORD, visitor)
        _, failures = tries.wait_left(visitor)
        seen.append((left > 0, round(verdict.wait_s), failures))
        # the wait is over (as if the visitor had waited it out); the count of wrong tries stays
        db.execute("UPDATE app.limit_failures SET next_try_at = clock_timestamp()")
    return seen


def test_access_a_browser_waits_for_its_own_wrong_tries_and_an_address_only_for_a_flood(db):
    from_one = _shared_tries(db, ["one browser"] * 10)
    assert from_one == [(False, round(access.delay_after(n)), n) for n in range(1, 11)]
    db.execute("DELETE FROM app.limit_failures")
    # A client that drops its cookie after every try: each fresh browser waits 1 s for its own try, and once
    # the
    # address has spent its 3 free tries (30 by default) the address waits the growing delays too.
    from_ten = _shared_tries(db, [f"fresh browser {i}" for i in range(10)], network_tries=3)
    assert from_ten == [(False, max(1, round(access.delay_after(n - 3))), 1) for n in range(1, 11)]
    # while the flood delay runs, a fresh browser on that network is refused unchecked, even with the right
    # password
    tries = access.SharedAttempts(lambda: db, network_tries=3)
    wrong = tries.attempt("wrong", PASSWORD, limits.Visitor.from_values("fresh browser 10", "203.0.113.7"))
    assert round(wrong.wait_s) == access.MAX_DELAY_S
    right = tries.attempt(PASSWORD, PASSWORD, limits.Visitor.from_values("fresh browser 11", "203.0.113.7"))
    assert (right.admitted, right.message.startswith("Too many wrong tries. Wait")) == (False, True)
    # another network is not held up by it
    elsewhere = tries.attempt(PASSWORD, PASSWORD, limits.Visitor.from_values("fresh browser 11", "198.51.100.1"))
    assert elsewhere.admitted


def test_access_one_persons_wrong_tries_never_refuse_another_browsers_right_password(db):
    tries = access.SharedAttempts(lambda: db)  # the default flood cap: 30 wrong tries per address
    a = limits.Visitor.from_values("browser A", "203.0.113.7")
    verdicts = []
    for _ in range(6):
        verdicts.append(tries.attempt("wrong", PASSWORD, a).admitted)
        db.execute("UPDATE app.limit_failures SET next_try_at = clock_timestamp() WHERE failures < 6")
    assert verdicts == [False] * 6 and tries.wait_left(a)[0] > 30  # A itself waits 32 s
    assert tries.attempt(PASSWORD, PASSWORD, limits.Visitor.from_values("browser B", "203.0.113.7")).admitted
    assert not tries.attempt(PASSWORD, PASSWORD, a).admitted
    db.execute("UPDATE app.limit_failures SET next_try_at = clock_timestamp()")  # A waited its 32 s
    assert tries.attempt(PASSWORD, PASSWORD, a).admitted
    assert tries.wait_left(a) == (0.0, 0)  # A's count is gone with the right password


def test_access_local_attempts_give_free_tries_and_forget_after_idling():
    a = access.Attempts(free=2, idle_s=10.0)
    assert [a.fail(t) for t in (0.0, 1.0, 2.0, 3.0, 4.0)] == [0.0, 0.0, 1.0, 2.0, 4.0]
    assert (a.fail(20.0), a.failures) == (0.0, 1)  # 16 s without a wrong try: the count started again


def test_access_browser_token_reads_the_xsrf_cookie_and_admissions_expire():
    token = bytes(range(32))
    mask = b"\x01\x02\x03\x04"
    masked = bytes(t ^ mask[i % 4] for i, t in enumerate(token))
    other_mask = b"\xff\x00\xff\x00"
    masked2 = bytes(t ^ other_mask[i % 4] for i, t in enumerate(token))
    one = access.browser_token(f"2|{mask.hex()}|{masked.hex()}|1700000000")
    two = access.browser_token(f"2|{other_mask.hex()}|{masked2.hex()}|1700000000")
    assert one == two == token.hex()
    assert [access.browser_token(""), access.browser_token("2|zz|yy|1")] == ["", ""]
    now = [1000.0]
    gate = access.Admissions(ttl_s=60, clock=lambda: now[0])
    assert (gate.active, gate.admitted(one)) == (False, False)
    gate.admit(one)
    assert (gate.active, gate.admitted(one), gate.admitted("someone else"), gate.admitted("")) == (True, True, False,
                                                                                                   False)
    now[0] += 61
    assert gate.admitted(one) is False


def _submit(at: AppTest, typed: str) -> AppTest:
    at.text_input(key="access_password").input(typed)
    next(b for b in at.button if b.label == "Enter").click()
    return at.run()


@pytest.fixture(autouse=True)
def _no_password_delays(db):
    # Wrong tries are remembered in the database per browser and network address (shared by every test's
    # AppTest, which has neither): each test starts without any.
    db.execute("DELETE FROM app.limit_failures")
    yield
    db.execute("DELETE FROM app.limit_failures")


def _failures(db) -> list[tuple[str, int]]:
    return [(r["key"][:2], int(r["failures"])) for r in
            db.fetch_rows("SELECT key, failures FROM app.limit_failures ORDER BY key")]


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
    assert _failures(db) == [("b:", 1), ("n:", 1)]

    # A right password typed while the visitor still has to wait is refused without being checked.
    db.execute("UPDATE app.limit_failures SET failures = 5, next_try_at = clock_timestamp() + interval '100 s'")
    _submit(at, PASSWORD)
    assert [e.value for e in at.error] == ["Too many wrong tries. Wait 100 seconds before trying again."]
    assert len(at.metric) == 0

    db.execute("UPDATE app.limit_failures SET next_try_at = clock_timestamp()")
    _submit(at, PASSWORD)
    assert not at.exception
    assert [t.value for t in at.title] == ["🧭 Trial Landscape"]
    assert [m.label for m in at.metric] == ["Studies", "Trial sites", "Sites with coordinates", "Newest update"]
    # The address's count stays (it decays on its own). AppTest sends no cookie and gives every run a new
    # session, so each run here is a new browser: the browser's own count is checked in the next tests.
    assert ("n:", 5) in _failures(db)
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


@pytest.mark.parametrize("page", ["app_pages/data.py"])
def test_access_gate_covers_other_pages(db, monkeypatch, page):
    monkeypatch.setenv("APP_PASSWORD", PASSWORD)
    at = AppTest.from_file(str(PROJECT / page), default_timeout=120).run()
    assert not at.exception
    assert [t.value for t in at.title] == ["🔒 Trial Landscape"]
    assert len(at.metric) == 0


def test_access_the_xsrf_cookie_name_is_defined_once_where_both_gates_read_it():
    # app.py (downloads) and services/ui/gate.py (pages) each spelled "_streamlit_xsrf": a rename in one would
    # let
    # the two gates read different cookies. services.access holds it; app.py still starts without the page
    # stack.
    import subprocess
    import sys

    root = PROJECT
    spelled = [p for p in [root / "app.py", *sorted((root / "services").rglob("*.py"))]
               if '"_streamlit_xsrf"' in p.read_text(encoding="utf-8")]
    assert spelled == [root / "services" / "access.py"]
    loaded = subprocess.run([sys.executable, "-c", "import sys, app; print(sorted(sys.modules))"], cwd=root,
                            capture_output=True, text=True, timeout=120, check=True).stdout
    assert "'services.access'" in loaded and "'services.ui.gate'" not in loaded and "'services.data'" not in loaded
