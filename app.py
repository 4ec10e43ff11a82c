"""Trial Landscape's entry point: `streamlit run app.py` (Streamlit detects the ASGI app) or `uvicorn app:app`.

The pages and their navigation are declared in navigation.py; this file serves them, adding what a script cannot:

- `GET /readyz` → 200 when the trial database answers a query, else 503 (for a load balancer; the built-in
  `/_stcore/health` only says the web server is up).
- `/media/…` (downloads: CSV, JSON, reports) is served only to a browser that passed the gate (password or
  OIDC) in this process; anyone else — another client holding the URL, a browser without the cookie — gets
  403. With no gate configured the app, and so its downloads, are open to all.
- At server start, a background thread gets the database and its engine ready and computes the landing
  dashboard (services.ui.health.warm_server), so the first visitor does not wait for them; the health check
  answers meanwhile.
"""

import asyncio
import contextlib
import os
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from services import access

MEDIA_PREFIX = "/media/"


class MediaGate:
    """Refuse /media/… requests from browsers that did not pass the access gate (when there is one)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and str(scope.get("path", "")).startswith(MEDIA_PREFIX) and _gated():
            token = access.browser_token(Request(scope).cookies.get(access.XSRF_COOKIE, ""))
            if not access.admissions.admitted(token):
                response = PlainTextResponse("This download is only for signed-in visitors of this instance; "
                                             "open the app and sign in first.", status_code=403)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _gated() -> bool:
    return access.admissions.active or bool(os.environ.get(access.PASSWORD_KEY))


async def ready(request: Request) -> JSONResponse:
    """Readiness for a load balancer: the trial database answers within a few seconds."""
    from services import readiness  # the database layer: imported by the warm-up, not before the health check

    verdict = await asyncio.to_thread(readiness.check)
    return JSONResponse(verdict, status_code=200 if verdict["ready"] else 503)


def _warm_server() -> None:
    from services.ui import health  # imported here: the server answers its health check meanwhile

    health.warm_server()


@contextlib.asynccontextmanager
async def lifespan(_app: st.App) -> AsyncIterator[None]:
    threading.Thread(target=_warm_server, name="server-warm-up", daemon=True).start()
    yield


app = st.App(str(Path(__file__).with_name("navigation.py")), routes=[Route("/readyz", ready, methods=["GET"])],
             middleware=[Middleware(MediaGate)], lifespan=lifespan)
