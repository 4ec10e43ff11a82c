"""The server's doors outside the page scripts, as ASGI middleware on Streamlit's app (wired in app.py).

- `OriginGate`: a WebSocket handshake whose Origin is neither this host nor a known one is refused here,
  before Streamlit's handler, which would first look up the machine's external address (a blocking HTTP
  request to checkip.amazonaws.com on the event loop, uncached when it fails: on a host without egress each
  foreign handshake stalled every other request for seconds).
- `DoorGate`: with a gate (password or OIDC), only an admitted browser (services.access.admissions, by the
  token in Streamlit's XSRF cookie) may PUT uploads, read /_stcore/metrics, use the agent API or send a
  WebSocket message beyond the sign-in form's reruns; /media/<id> goes only to the browser of a session that
  made the file (services.access.media_owners), gated or not, and a withdrawn file answers 404.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import streamlit as st
from starlette.requests import HTTPConnection
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from streamlit import config, url_util
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.runtime.scriptrunner import get_script_run_ctx

from services import access, settings

_log = logging.getLogger(__name__)

# Streamlit accepts these origins before any look-up (server_util.is_url_from_allowed_origins).
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "0.0.0.0"})  # noqa: S104 - names, not a bind
# What a browser that has not passed the gate may send over the WebSocket: reruns of the sign-in form (small:
# a password is at most 256 characters) and keep-alives. File upload URLs, cache clearing, backend operations
# and the like are dropped.
UNADMITTED_MESSAGES = frozenset({"rerun_script", "app_heartbeat", "stop_script"})
UNADMITTED_MAX_BYTES = 32_768
ADMITTED_ONLY = ("_stcore/upload_file/", "_stcore/metrics", "_stcore/agent/")
MEDIA = "media/"


def _base() -> str:
    base = str(config.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}/" if base else "/"


def base_path() -> str:
    """The server's base URL path ("/" or "/<server.baseUrlPath>/")."""
    return _base()


def secrets() -> dict[str, Any]:
    """Streamlit's secrets as a dict ({} without a secrets file); raises when the file cannot be read."""
    return st.secrets.to_dict() if st.secrets.load_if_toml_exists() else {}


def gated() -> bool:
    """Whether this instance has a gate: a password (environment or secrets) or an OIDC [auth] section."""
    if access.admissions.active or settings.current().app_password:
        return True
    try:
        secrets_ = secrets()
    except Exception:  # noqa: BLE001 - an unreadable secrets file locks the pages; the doors stay shut too
        return True
    return (access.configured_password(settings.read({}), secrets_) is not None
            or access.oidc_config(secrets_.get("auth")) is not None)


def _token(scope: Scope) -> str:
    return access.browser_token(HTTPConnection(scope).cookies.get(access.XSRF_COOKIE, ""))


# ---- WebSocket origins ---------------------------------------------------------------------------------
def known_hosts() -> tuple[frozenset[str], frozenset[str]]:
    """Host names a page may connect from besides this host: those Streamlit accepts before any look-up
    (loopback, browser.serverAddress when set), and the hosts of server.corsAllowedOrigins (which it checks
    only after looking up its external address)."""
    early = set(LOOPBACK_HOSTS)
    if config.is_manually_set("browser.serverAddress"):
        early.add(url_util.get_hostname(str(config.get_option("browser.serverAddress"))) or "")
    origins = config.get_option("server.corsAllowedOrigins") or []
    listed = {urlsplit(str(o).strip()).hostname or "" for o in origins}
    return frozenset(h for h in early if h), frozenset(h for h in listed - early if h)


def origin_verdict(origin: str, host: str | None, early: frozenset[str],
                   listed: frozenset[str]) -> str | None:
    """None to refuse; else the Origin to hand on to Streamlit: unchanged for this host and for hosts
    Streamlit accepts before any look-up; this host's own origin for a host of corsAllowedOrigins, so
    Streamlit accepts it as same-origin instead of looking up its external address first."""
    parts = urlsplit(origin)
    if parts.netloc and parts.netloc == host:
        return origin
    hostname = parts.hostname or ""
    if hostname in early:
        return origin
    if hostname in listed and host:
        return f"{parts.scheme or 'http'}://{host}"
    return None


class OriginGate:
    """Refuse WebSocket handshakes from foreign origins before Streamlit does any work for them."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket" or not config.get_option("server.enableCORS"):
            await self.app(scope, receive, send)
            return
        headers = HTTPConnection(scope).headers
        origin = headers.get("origin")
        if origin is not None:  # no Origin: not a browser page, which Streamlit accepts without a look-up
            verdict = origin_verdict(origin, headers.get("host"), *known_hosts())
            if verdict is None:
                _log.debug("refused a WebSocket handshake from a foreign origin")
                await send({"type": "websocket.close", "code": 1008})
                return
            if verdict != origin:
                raw = [(k, v) for k, v in scope["headers"] if k != b"origin"]
                raw.append((b"origin", verdict.encode()))
                scope = {**scope, "headers": raw}
        await self.app(scope, receive, send)


# ---- the gate on every door --------------------------------------------------------------------------------
def _refuse(status: int, text: str) -> PlainTextResponse:
    return PlainTextResponse(text, status_code=status)


class DoorGate:
    """Uploads, metrics, the agent API, WebSocket messages and media only for those who may have them."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        base = _base()
        rest = path[len(base):] if path.startswith(base) else None
        if rest is not None and (rest.startswith(ADMITTED_ONLY) or rest.startswith(MEDIA)):
            response = self._http_verdict(rest, _token(scope))
            if response is not None:
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)

    @staticmethod
    def _http_verdict(rest: str, token: str) -> PlainTextResponse | None:
        is_gated = gated()
        if is_gated and not access.admissions.admitted(token):
            return _refuse(403, "This is only for signed-in visitors of this instance; open the app and "
                                "sign in first.")
        if rest.startswith(MEDIA):
            file_id = rest[len(MEDIA):].split(".", 1)[0]
            if access.media_owners.may_serve(file_id, token, gated=is_gated) is False:
                return _refuse(404, "File not found.")
        return None

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = _token(scope)

        async def checked_receive() -> Message:
            while True:
                message = await receive()
                data = message.get("bytes") if message.get("type") == "websocket.receive" else None
                if data is None or access.admissions.admitted(token) or not gated() or _harmless(data):
                    return message
                _log.info("dropped a WebSocket message from a browser that has not signed in")

        await self.app(scope, checked_receive, send)


def _harmless(data: bytes) -> bool:
    """Whether a not-yet-admitted browser may send this message (the sign-in form's reruns, keep-alives)."""
    if len(data) > UNADMITTED_MAX_BYTES:
        return False
    msg = BackMsg()
    try:
        msg.ParseFromString(data)
    except Exception:  # noqa: BLE001 - not a BackMsg: Streamlit closes the connection for it
        return True
    return msg.WhichOneof("type") in UNADMITTED_MESSAGES


# ---- who made which media file
# -------------------------------------------------------------------------------
def _media_file_id(url: str) -> str:
    return url.rsplit("/", 1)[-1].split(".", 1)[0]


def _current_session() -> str | None:
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else None


def watch_media(manager: Any, owners: access.MediaOwners = access.media_owners) -> None:
    """Record in `owners` which session makes each media file of Streamlit's media file manager.

    Streamlit's manager knows a file's sessions only until their next run (and serves any file to anyone), so
    its three public entry points are wrapped on this one instance: add (a file made by a script run),
    add_deferred (a download made on click: its placeholder id) and execute_deferred (the click: the file it
    makes belongs to the placeholder's owners). Removal condition: Streamlit serving media per session.
    """
    if getattr(manager, "_trial_landscape_watched", False):
        return
    add, add_deferred, execute_deferred = manager.add, manager.add_deferred, manager.execute_deferred

    def watched_add(*args: Any, **kwargs: Any) -> str:
        url: str = add(*args, **kwargs)
        session = _current_session()
        if session is not None:
            owners.add(session, _media_file_id(url))
        return url

    def watched_add_deferred(*args: Any, **kwargs: Any) -> str:
        placeholder: str = add_deferred(*args, **kwargs)
        session = _current_session()
        if session is not None:
            owners.add(session, placeholder)
        return placeholder

    def watched_execute_deferred(placeholder: str) -> str:
        url: str = execute_deferred(placeholder)
        owners.add("", _media_file_id(url), like=placeholder)
        return url

    manager.add, manager.add_deferred = watched_add, watched_add_deferred
    manager.execute_deferred = watched_execute_deferred
    manager._trial_landscape_watched = True  # noqa: SLF001 - our own marker on the instance


def forget_session_media(delete: Callable[[str], None] | None = None) -> int:
    """Withdraw this browser session's media files now (they answer 404 at once) and delete the bytes of
    those no other session uses; returns how many were deleted."""
    session = _current_session()
    if session is None:
        return 0
    orphans = access.media_owners.forget_session(session)
    if delete is None:
        from streamlit import runtime

        # Streamlit's own routes read its storage the same way (starlette_app: media_manager._storage).
        storage = getattr(runtime.get_instance().media_file_mgr, "_storage", None)
        delete = getattr(storage, "delete_file", None)
    if delete is not None:
        for file_id in orphans:
            delete(file_id)
    return len(orphans)
