"""Trial Landscape's entry point: `streamlit run app.py` (Streamlit detects the ASGI app) or `uvicorn app:app`.

The pages and their navigation are declared in navigation.py; this file serves them, adding what a script cannot:

- `GET /readyz` → 200 when the trial database answers a query, else 503 (for a load balancer; the built-in
  `/_stcore/health` only says the web server is up). The body says only `ready` and `latency_ms`.
- The doors outside the pages (services/ui/doors.py): WebSocket handshakes from foreign origins are refused
  before Streamlit looks at them; with a gate (password or OIDC) uploads, `/_stcore/metrics`, the agent API
  and WebSocket messages beyond the sign-in form are only for admitted browsers; `/media/…` (downloads, the
  report) goes only to the browser of the session that made it, and not at all once that session forgot it.
- The URL API (services/ui/api.py): `/api/v1/stats.json`, `trials.json`, `trials.csv`, `trial/NCT….json`,
  `sql.json` and `openapi.json`, the share link's query string in, JSON or CSV out, behind the same gate.
- An error in a page shows a short message with a reference; the trace goes to the server's log.
- At server start, a background thread gets the database and its engine ready and computes the landing
  dashboard (services.ui.health.warm_server), so the first visitor does not wait for them; the health check
  answers meanwhile.
"""

import asyncio
import contextlib
import logging
import sys
import threading
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from services import settings
from services.ui import apiroutes, doors

_log = logging.getLogger("trial_landscape.app")

try:  # every setting once, before anything starts: a bad value stops the start with its name
    settings.check()
except settings.SettingsError as bad:
    sys.exit(f"Trial Landscape cannot start: {bad}")


async def ready(request: Request) -> JSONResponse:
    """Readiness for a load balancer: the trial database answers within a few seconds."""
    from services import readiness  # the database layer: imported by the warm-up, not before the health check

    verdict = await asyncio.to_thread(readiness.check)
    if not verdict["ready"]:
        _log.warning("not ready: %s", verdict.get("error", "no answer"))
    # Only the verdict and the latency: the database's label or an error could name a path or a host.
    body = {"ready": bool(verdict["ready"]), "latency_ms": verdict.get("latency_ms")}
    return JSONResponse(body, status_code=200 if verdict["ready"] else 503)


def page_error(exc: Exception) -> bool:
    """An uncaught error in a page: a short message with a reference in the page, the trace in the
    server's log (Streamlit logs it before calling this). Streamlit's own box follows, redacted
    (client.showErrorDetails = "none"): it stays, as the browser tests look for it."""
    ref = uuid.uuid4().hex[:8]
    _log.error("page error %s: %s (trace logged just before)", ref, type(exc).__name__)
    st.error(f"Something went wrong on this page (reference {ref}); it has been logged for the operator. "
             "Reload the page or try again; if it keeps happening, tell them the reference.", icon="⚠️")
    return False


def _warm_server() -> None:
    from services.ui import health  # imported here: the server answers its health check meanwhile

    health.warm_server()


@contextlib.asynccontextmanager
async def lifespan(_app: st.App) -> AsyncIterator[None]:
    from streamlit import runtime

    doors.watch_media(runtime.get_instance().media_file_mgr)
    threading.Thread(target=_warm_server, name="server-warm-up", daemon=True).start()
    yield


app = st.App(str(Path(__file__).with_name("navigation.py")),
             routes=[Route("/readyz", ready, methods=["GET"]), *apiroutes.routes()],
             middleware=[Middleware(doors.OriginGate), Middleware(doors.DoorGate)], lifespan=lifespan,
             on_script_error=page_error)
