"""The access gate: OIDC login or a shared password before any page renders, and who the visitor is."""

from __future__ import annotations

import contextlib
import os
from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from services import access, limits, settings
from services.data import runtime

_ACCESS_KEY = "access_key"
_PASSWORD_WIDGET = "access_password"


def _secrets() -> dict[str, Any]:
    """Streamlit secrets as a plain dict ({} when there is no secrets file)."""
    if not st.secrets.load_if_toml_exists():
        return {}
    return st.secrets.to_dict()


def require_access() -> None:
    """Stop the page behind a login when the instance is protected, before anything else renders.

    An [auth] section in Streamlit secrets → Streamlit's own OIDC login (st.login / st.user);
    else APP_PASSWORD (environment or secrets) → a password form; else the app is open.
    """
    _bind_media()
    try:
        secrets = _secrets()
    except Exception as err:  # noqa: BLE001 - an unreadable secrets file must lock the app, not open it
        st.error(f"The server's secrets file cannot be read, so access cannot be checked: {type(err).__name__}. "
                 "The operator must fix `.streamlit/secrets.toml`.", icon="🔒")
        st.stop()
    oidc = access.oidc_config(secrets.get("auth"))
    if oidc is not None:
        if not st.user.get("is_logged_in", False):
            _login_screen(oidc)
            st.stop()
        _admit_browser()
        return
    password = access.configured_password(settings.current(), secrets)
    if password is None:
        return
    access.admissions.active = True
    if st.session_state.get(_ACCESS_KEY) == access.fingerprint(password):
        _admit_browser()
        return
    _password_screen(password)
    st.stop()


_HIDE_NAVIGATION = ("<style>[data-testid='stSidebar'], [data-testid='stSidebarCollapsedControl'], "
                    "[data-testid='stExpandSidebarButton'] {display: none;}</style>")


def _locked_page(intro: str) -> None:
    st.markdown(_HIDE_NAVIGATION, unsafe_allow_html=True)
    st.title("🔒 Trial Landscape")
    st.write(intro)


def _login_screen(oidc: access.OidcConfig) -> None:
    _locked_page("This instance is for signed-in users. Sign in with your organisation's account to "
                 "continue.")
    if st.button("Sign in", type="primary", key="access_login"):
        st.login(oidc.provider) if oidc.provider else st.login()


def _check_password(password: str) -> None:
    # Runs as the form's callback, before the script: the typed text is taken out of session state at
    # once, so it never lingers in a widget, the URL or a log line.
    typed = str(st.session_state.get(_PASSWORD_WIDGET) or "")
    st.session_state[_PASSWORD_WIDGET] = ""
    verdict = _password_tries().attempt(typed, password, visitor())
    if verdict.admitted:
        st.session_state[_ACCESS_KEY] = access.fingerprint(password)
    else:
        st.session_state["access_message"] = verdict.message


@st.cache_resource(show_spinner=False)
def _password_tries() -> access.SharedAttempts:
    # One per process; the delays themselves live in the app database, shared by every process.
    tries = settings.current().app_password_network_tries
    return access.SharedAttempts(runtime.get_app_db, network_tries=tries)


def _browser_token() -> str:
    with contextlib.suppress(Exception):
        cookie = st.context.cookies.get(access.XSRF_COOKIE)
        # Only a real cookie value: a test double's stand-in object would be a new "browser" on every run.
        return access.browser_token(cookie if isinstance(cookie, str) else "")
    return ""


def _bind_media() -> None:
    # The media gate (app.py) serves a session's downloads only to the browser bound to it here.
    ctx = get_script_run_ctx()
    if ctx is not None:
        access.media_owners.bind(ctx.session_id, _browser_token())


def _admit_browser() -> None:
    # Downloads are plain HTTP requests outside the session: the media gate (app.py) serves them only to a
    # browser admitted here.
    access.admissions.admit(_browser_token())


def _address() -> str:
    # The client's address as Streamlit sees it, or behind the proxy named by $TRUSTED_PROXY the client's from
    # X-Forwarded-For; "unknown" when Streamlit cannot tell.
    address = ""
    with contextlib.suppress(Exception):
        ip = st.context.ip_address
        # None for a loopback peer (or a test double): a local proxy must still be recognised as trusted.
        peer = ip if isinstance(ip, str) else "127.0.0.1"
        forwarded = str(st.context.headers.get("X-Forwarded-For") or "")
        address = access.client_address(peer, forwarded, settings.current().proxies)
    return address or "unknown"


def visitor() -> limits.Visitor:
    """This browser and its network address, as digests: the keys of the wrong-password delays.

    The browser is known by the token inside Streamlit's XSRF cookie (the same in every tab and every new
    session of that browser); without the cookie, by the session, so one cookie-less client's wrong tries never
    hold up another behind the same address (the address's flood cap still holds).
    """
    token = _browser_token()
    if not token:
        ctx = get_script_run_ctx()
        token = "session:" + (ctx.session_id if ctx is not None else os.urandom(16).hex())
    return limits.Visitor.from_values(token, _address())


def limit_visitor() -> limits.Visitor:
    """This browser and its network address, as digests: the keys of the per-visitor message limits.

    Like visitor(), but a client without the cookie is known by its address, not its session: a new session
    (a reload, a fresh connection) must not start its message count again.
    """
    address = _address()
    return limits.Visitor.from_values(_browser_token() or "address:" + address, address)


def _password_screen(password: str) -> None:
    _locked_page("This instance is protected. Enter the password you were given to continue.")
    with st.form("access_form", clear_on_submit=True, border=True):
        st.text_input("Password", type="password", key=_PASSWORD_WIDGET, max_chars=256)
        st.form_submit_button("Enter", type="primary", on_click=_check_password, args=(password,))
    message = st.session_state.pop("access_message", None)
    if message:
        st.error(message, icon="🚫")
    else:
        wait, failures = _password_tries().wait_left(visitor())
        if wait > 0:
            why = (f"After {failures} wrong tries in a row from this browser" if failures
                   else "After many wrong tries from your network")
            st.info(f"{why}, the next try is accepted in {wait:.0f} s.", icon="⏳")
