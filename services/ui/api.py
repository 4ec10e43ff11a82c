"""The URL API's routes on the app's ASGI server (wired in app.py): /api/v1/stats.json, trials.json,
trials.csv, trial/NCT….json, sql.json and openapi.json.

Behind the same gate as the pages: with a password, a request carries it (HTTP Basic with any user name, or
`Authorization: Bearer <password>`) and wrong ones cost the sign-in form's growing delays (services.access
.SharedAttempts, kept in the app database); a browser that signed in to the pages may call it with its cookie;
with OIDC only such a browser may. Limits: API_RATE requests per minute per client address (default 120),
API_CONCURRENT requests at once per process (default 4, waiting API_WAIT_S), and the SQL route runs under the
console's own limits and budget (services/console.py). Every refusal and error is JSON `{"error": …}`; a trace
goes only to the log, under a reference the body names.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from services import access, console, limits, settings
from services.dashboard import api, export, search
from services.data import runtime
from services.errors import (
    BadInput,
    ConsoleBusy,
    DatabaseUnavailable,
    QueryFailed,
    QueryTimeout,
    QueryTooHeavy,
    ResultTooLarge,
    TrialLandscapeError,
)
from services.ui import doors

_log = logging.getLogger(__name__)

PREFIX = f"/api/{api.VERSION}"
ADMITTED_TTL_S = 600.0  # a right password is checked against the shared delays again after this long


class _Limits:
    """This process's API limits: a sliding window per client address and a cap on requests at once."""

    def __init__(self) -> None:
        config = settings.current()
        self.rate = limits.SlidingWindowLimiter(config.api_rate, 60.0)
        self.slots = threading.BoundedSemaphore(config.api_concurrent)
        self.concurrent = config.api_concurrent
        self.wait_s = config.api_wait_s
        self.tries = access.SharedAttempts(
            runtime.get_app_db, network_tries=config.app_password_network_tries
        )
        self._admitted: dict[str, float] = {}
        self._lock = threading.Lock()

    def recently_admitted(self, key: str) -> bool:
        with self._lock:
            return self._admitted.get(key, 0.0) > time.monotonic()

    def admit(self, key: str) -> None:
        with self._lock:
            if len(self._admitted) > 10_000:
                self._admitted.clear()
            self._admitted[key] = time.monotonic() + ADMITTED_TTL_S


_limits: _Limits | None = None
_limits_lock = threading.Lock()


def _state() -> _Limits:
    global _limits
    with _limits_lock:
        if _limits is None:
            _limits = _Limits()
        return _limits


def _error(
    status: int, message: str, details: list[str] | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    body = api.ApiError(status, message, details or ()).body()
    return JSONResponse(body, status_code=status, headers=headers)


def _address(request: Request) -> str:
    peer = request.client.host if request.client else "127.0.0.1"
    return (
        access.client_address(peer, request.headers.get("x-forwarded-for", ""), settings.current().proxies)
        or "unknown"
    )


def _given_password(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer":
        return value.strip()[:256]
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return ""
        return decoded.partition(":")[2][:256]
    return None


def _gate(request: Request, address: str) -> JSONResponse | None:
    """None when this request may go on; else the refusal (401, or 429 while wrong passwords cost a wait)."""
    if not doors.gated():
        return None
    if access.admissions.admitted(doors._token(request.scope)):  # noqa: SLF001 - the doors' cookie reading
        return None
    password = access.configured_password(settings.current(), doors.secrets())
    challenge = {"WWW-Authenticate": 'Basic realm="Trial Landscape API", charset="UTF-8"'}
    if password is None:
        return _error(
            401,
            "This instance signs people in with their organisation's account: open the app "
            "in a browser and sign in; the API then answers that browser.",
        )
    given = _given_password(request)
    if given is None:
        return _error(
            401,
            "This instance has a password: send it as HTTP Basic (any user name) or as "
            "'Authorization: Bearer <password>'.",
            headers=challenge,
        )
    state = _state()
    key = hashlib.sha256(f"{address}\0{access.fingerprint(given)}".encode()).hexdigest()
    if access.password_matches(given, password) and state.recently_admitted(key):
        return None
    verdict = state.tries.attempt(given, password, limits.Visitor.from_values("api:" + address, address))
    if verdict.admitted:
        state.admit(key)
        return None
    retry = {"Retry-After": str(max(1, round(verdict.wait_s)))}
    status = 401 if "not right" in verdict.message else 429
    return _error(status, verdict.message, headers={**challenge, **retry})


def _failure(err: Exception) -> JSONResponse:
    """A typed error as JSON with the status it deserves; anything else a 500 with a reference (trace in the
    log)."""
    if isinstance(err, api.ApiError):
        return JSONResponse(err.body(), status_code=err.status)
    if isinstance(err, ConsoleBusy):
        return _error(429, str(err), headers={"Retry-After": "5"})
    if isinstance(err, (ResultTooLarge, QueryTooHeavy, QueryTimeout)):
        return _error(422, f"Stopped. {err} {getattr(err, 'hint', '')}".strip())
    if isinstance(err, BadInput):  # UnsafeQuery included: what the console refuses
        return _error(400, f"Not run. {err}")
    if isinstance(err, QueryFailed):
        return _error(400, str(err))
    if isinstance(err, DatabaseUnavailable):
        return _error(503, "The trial database is not available right now; try again shortly.")
    ref = uuid.uuid4().hex[:8]
    if isinstance(err, TrialLandscapeError):
        _log.warning("API error %s: %s", ref, err)
    else:
        _log.exception("API error %s", ref)
    return _error(500, f"Something went wrong (reference {ref}); it has been logged for the operator.")


Handler = Callable[[Request, dict[str, list[str]], str], Any]


def _route(path: str, handler: Handler) -> Route:
    """A GET route: gate, limits and JSON errors around a handler that runs in a worker thread."""

    async def endpoint(request: Request) -> Response:
        address = _address(request)
        try:
            params = api.grouped(request.query_params.multi_items())
            decision = _state().rate.try_acquire(address)
            if not decision.allowed:
                wait = max(1, round(decision.retry_after_s))
                return _error(
                    429,
                    f"Too many requests from this address; try again in {wait} s.",
                    headers={"Retry-After": str(wait)},
                )
            refused = await asyncio.to_thread(_gate, request, address)
            if refused is not None:
                return refused
            return await asyncio.to_thread(_limited, handler, request, params, address)
        except Exception as err:  # noqa: BLE001 - every failure is a JSON answer (_failure logs the unknown)
            return _failure(err)

    return Route(f"{PREFIX}/{path}", endpoint, methods=["GET"])


def _limited(handler: Handler, request: Request, params: dict[str, list[str]], address: str) -> Response:
    state = _state()
    if not state.slots.acquire(timeout=state.wait_s):
        return _error(
            503,
            f"The API is busy: {state.concurrent} requests are running on this server, its "
            "limit. Try again in a few seconds.",
            headers={"Retry-After": "5"},
        )
    try:
        result = handler(request, params, address)
    finally:
        state.slots.release()
    return result if isinstance(result, Response) else JSONResponse(result)


# ---- the routes --------------------------------------------------------------------------------------------
def _stats(request: Request, params: dict[str, list[str]], address: str) -> Any:
    return api.stats_payload(api.filters_of(params))


def _trials(request: Request, params: dict[str, list[str]], address: str) -> Any:
    own = tuple(api.TrialsParams.model_fields)
    return api.trials_payload(api.filters_of(params, own), api.model_of(api.TrialsParams, params))


def _trials_csv(request: Request, params: dict[str, list[str]], address: str) -> Response:
    own = tuple(api.TrialsParams.model_fields)
    frame, total, _, _ = api.trials_frame(api.filters_of(params, own), api.model_of(api.TrialsParams, params))
    name = export.file_name("trials-api", "csv")
    return Response(
        export.to_csv_bytes(frame),
        media_type="text/csv; charset=utf-8",
        headers={"X-Total-Count": str(total), "Content-Disposition": f'attachment; filename="{name}"'},
    )


def _trial(request: Request, params: dict[str, list[str]], address: str) -> Any:
    nct = search.parse_nct_id(str(request.path_params.get("nct_id", "")))
    detail = search.trial_detail(nct)
    if detail is None:
        raise api.ApiError(404, f"No trial {nct} in the connected database.")
    return api.trial_payload(detail)


def _sql(request: Request, params: dict[str, list[str]], address: str) -> Any:
    query = api.model_of(api.SqlParams, params)
    unknown = [k for k in params if k != api.SQL_KEY and not k.startswith("sql.")]
    if unknown:
        raise api.ApiError(
            400,
            "Unknown parameter(s): " + ", ".join(unknown[:10]) + "; the SQL route takes "
            "sql and sql.<name> values.",
        )
    result = console.run_query(query.sql, api.sql_values(params), visitor="api:" + address)
    return api.sql_payload(result)


def _openapi(request: Request, params: dict[str, list[str]], address: str) -> Any:
    return api.openapi(doors.base_path())


ROUTES = [
    _route("stats.json", _stats),
    _route("trials.json", _trials),
    _route("trials.csv", _trials_csv),
    _route("trial/{nct_id}.json", _trial),
    _route("sql.json", _sql),
    _route("openapi.json", _openapi),
]


def routes() -> list[Route]:
    """The API's routes for the app's server."""
    return list(ROUTES)
