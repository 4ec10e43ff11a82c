"""Live look-ups on ClinicalTrials.gov (API v2): a trial's status today, on request only.

Our copy of the registry is a snapshot; before a patient calls a trial team they want to know whether the trial is
still open. When the machine is online, :func:`live_status` fetches the trial's current record and says what
ClinicalTrials.gov shows now, with the time it was asked ("as of"). Nothing about the patient is sent for a status
look-up: only the NCT id. :meth:`LiveClient.search` (the CLI's `live search`) sends what its caller passes.

The client is polite and bounded: one request at a time and at least ``min_interval_s`` (1.5 s) from the end of one
request to the start of the next from this process, so the server sees that much quiet however long each took; a
request budget per hour; on HTTP 429 it waits (the server's Retry-After, else 1, 2, 4 … s) and tries again a few
times; short timeouts. Every failure becomes a :class:`LiveUnavailable` whose message says what happened and what to
do, and the app goes on with its own copy. Answers are kept for ten minutes.

Settings (environment): ``CTGOV_API_URL`` (default https://clinicaltrials.gov/api/v2 — tests point it at a local
fake server), ``CTGOV_LIVE=off`` to switch look-ups off, ``CTGOV_LIVE_BUDGET`` (requests per hour, default 120).
"""

from __future__ import annotations

import datetime as dt
import email.utils
import http.client
import json
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from services import settings
from services.data.normalize import ENROLLING_STATUSES, canonical
from services.errors import TrialLandscapeError
from services.inert import one_line
from services.trials import NCT_RE, status_words

MIN_INTERVAL_S = 1.5
TIMEOUT_S = 10.0
MAX_RETRIES = 3  # after the first try, on HTTP 429
BACKOFF_BASE_S = 1.0
MAX_WAIT_S = 8.0  # a page waits for the answer: a longer Retry-After gives up at once and says when to try
MAX_BODY_BYTES = 8 * 1024 * 1024  # one study record is ~50 kB; a search page of 100 a few MB
CACHE_TTL_S = 600
_API_DATE = re.compile(r"\d{4}-\d{2}(-\d{2})?", re.ASCII)
_FIELDS = "protocolSection.identificationModule|protocolSection.statusModule|protocolSection.contactsLocationsModule.locations"


class LiveUnavailable(TrialLandscapeError):
    """A live look-up did not give an answer; the message says why, the hint what the app does instead."""

    hint = "The status shown is from our copy of the registry; check the trial's page on ClinicalTrials.gov."


@dataclass(frozen=True)
class LiveStatus:
    """What ClinicalTrials.gov says about a trial now."""

    nct_id: str
    overall_status: str | None  # API v2 code, e.g. RECRUITING
    last_update_posted: str | None
    why_stopped: str | None
    recruiting_sites: int
    sites: int
    checked_at: dt.datetime  # UTC

    @property
    def enrolling(self) -> bool:
        return canonical("status", self.overall_status or "") in ENROLLING_STATUSES

    @property
    def as_of(self) -> str:
        return f"{self.checked_at:%Y-%m-%d %H:%M} UTC"


def live_enabled() -> bool:
    return settings.current().ctgov_live


def api_url() -> str:
    return settings.current().ctgov_api_url


def _budget() -> int:
    return settings.current().ctgov_live_budget


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (a number of seconds or an HTTP date); None if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdecimal():  # not isdigit: a superscript digit is a digit that float() cannot read
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # zone "-0000": UTC, with the sender's own zone unknown
        when = when.replace(tzinfo=dt.UTC)
    return max(0.0, (when - dt.datetime.now(dt.UTC)).total_seconds())


class LiveClient:
    """A polite, bounded HTTP client for the ClinicalTrials.gov API v2 (thread-safe; one per process)."""

    def __init__(self, base_url: str | None = None, *, min_interval_s: float = MIN_INTERVAL_S,
                 budget_per_hour: int | None = None, timeout_s: float = TIMEOUT_S, max_retries: int = MAX_RETRIES,
                 backoff_base_s: float = BACKOFF_BASE_S, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.base_url = (base_url or api_url()).rstrip("/")
        self.min_interval_s = min_interval_s
        self.budget_per_hour = budget_per_hour or _budget()
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self._sleep, self._clock = sleep, clock
        self._lock = threading.Lock()  # one request at a time: spacing and budget are per process
        self._last_end: float | None = None
        self._sent: deque[float] = deque()
        self._cache: dict[str, tuple[float, LiveStatus]] = {}

    # ---- public ----------------------------------------------------------------------------------------
    def status(self, nct_id: str) -> LiveStatus:
        """The trial's current status on ClinicalTrials.gov (kept ten minutes)."""
        nct_id = nct_id.strip().upper()
        if not NCT_RE.fullmatch(nct_id):
            raise LiveUnavailable(f"“{one_line(nct_id, 40)}” is not an NCT number "
                                  "(NCT followed by 8 digits).")
        cached = self._cache.get(nct_id)
        if cached is not None and self._clock() - cached[0] < CACHE_TTL_S:
            return cached[1]
        doc = self._get(f"/studies/{nct_id}", {"fields": _FIELDS}, not_found=f"ClinicalTrials.gov has no trial "
                        f"{nct_id} (it may have been withdrawn from the public site).")
        found = parse_status(doc, nct_id)
        self._cache[nct_id] = (self._clock(), found)
        return found

    def search(self, *, condition: str | None = None, age: float | None = None, sex: str | None = None,
               statuses: tuple[str, ...] = (), page_size: int = 50) -> dict[str, Any]:
        """Studies ClinicalTrials.gov finds now (one page): the raw API answer (``studies``, ``totalCount``)."""
        params: dict[str, str] = {"pageSize": str(max(1, min(100, page_size))), "countTotal": "true",
                                  "fields": _FIELDS}
        if condition and condition.strip():
            params["query.cond"] = condition.strip()[:200]
        term = age_term(age)
        if term:
            params["query.term"] = term
        if sex:
            code = {"FEMALE": "f", "MALE": "m"}.get(sex.strip().upper())
            if code is None:
                raise LiveUnavailable("Sex must be female or male for a live search.")
            params["aggFilters"] = f"sex:{code}"
        if statuses:
            params["filter.overallStatus"] = ",".join(statuses)
        return self._get("/studies", params)

    # ---- HTTP ------------------------------------------------------------------------------------------
    def _take_budget(self) -> None:
        now = self._clock()
        while self._sent and now - self._sent[0] >= 3600:
            self._sent.popleft()
        if len(self._sent) >= self.budget_per_hour:
            wait_min = max(1, round((3600 - (now - self._sent[0])) / 60))
            raise LiveUnavailable(f"This server has used its {self.budget_per_hour} live look-ups for this hour; "
                                  f"the next one is possible in about {wait_min} min.")
        self._sent.append(now)

    def _send(self, request: urllib.request.Request) -> bytes:
        """One request, started at least ``min_interval_s`` after the previous one ended, whatever its outcome."""
        if self._last_end is not None and (wait := self.min_interval_s - (self._clock() - self._last_end)) > 0:
            self._sleep(wait)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:  # noqa: S310 - https/our URL
                body = answer.read(MAX_BODY_BYTES + 1)
                if answer.length and len(body) <= MAX_BODY_BYTES:  # read(n) returns short where the body ended early
                    raise http.client.IncompleteRead(body, answer.length)
                return body
        finally:
            self._last_end = self._clock()

    # Retries by hand, not urllib3's Retry: every try must take the hourly budget and the 1.5 s spacing, and a
    # Retry-After over MAX_WAIT_S gives up at once — Retry sleeps inside the pool and can do neither.
    def _get(self, path: str, params: Mapping[str, str], *, not_found: str | None = None) -> dict[str, Any]:
        url = f"{self.base_url}{path}?{urllib.parse.urlencode({**params, 'format': 'json'})}"
        request = urllib.request.Request(url, headers={"Accept": "application/json",
                                                       "User-Agent": "trial-landscape (live status look-up)"})
        with self._lock:
            for attempt in range(self.max_retries + 1):
                self._take_budget()
                try:
                    body = self._send(request)
                except urllib.error.HTTPError as err:
                    if err.code == 429 and attempt < self.max_retries:
                        asked = _retry_after(err.headers.get("Retry-After") if err.headers else None)
                        if asked is not None and asked > MAX_WAIT_S:
                            raise LiveUnavailable(f"ClinicalTrials.gov asked us to wait {asked:.0f} s before the "
                                                  "next request. Try again then.") from None
                        self._sleep(asked if asked is not None else self.backoff_base_s * 2 ** attempt)
                        continue
                    raise self._http_error(err, not_found) from None
                except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as err:
                    raise LiveUnavailable(_offline_message(err)) from None
                except http.client.HTTPException as err:  # BadStatusLine, IncompleteRead, LineTooLong, …
                    raise LiveUnavailable(f"ClinicalTrials.gov sent a broken answer ({type(err).__name__}); it was "
                                          "not used. Try again later.") from None
                if len(body) > MAX_BODY_BYTES:
                    raise LiveUnavailable("ClinicalTrials.gov sent more than expected; the answer was not used.")
                try:
                    doc = json.loads(body)
                except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser follows
                    raise LiveUnavailable("ClinicalTrials.gov answered with something that is not JSON (a "
                                          "maintenance page?). Try again later.") from None
                if not isinstance(doc, dict):
                    raise LiveUnavailable("ClinicalTrials.gov answered in an unexpected form; the answer was not used.")
                return doc
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _http_error(self, err: urllib.error.HTTPError, not_found: str | None) -> LiveUnavailable:
        if err.code == 429:
            return LiveUnavailable(f"ClinicalTrials.gov asked us to slow down and still refused after "
                                   f"{self.max_retries + 1} tries. Try again in a few minutes.")
        if err.code == 404 and not_found:
            return LiveUnavailable(not_found)
        try:
            detail = err.read(2000).decode("utf-8", "replace")
        except (OSError, http.client.HTTPException):
            detail = ""
        # The server's text is shown to the user: one short plain line, no markup.
        said = f" It said: {one_line(detail, 200)}" if detail.strip() else ""
        if 400 <= err.code < 500:
            return LiveUnavailable(f"ClinicalTrials.gov refused the request (HTTP {err.code}).{said}")
        return LiveUnavailable(f"ClinicalTrials.gov is having trouble (HTTP {err.code}). Try again later.{said}")


def _offline_message(err: BaseException) -> str:
    reason = getattr(err, "reason", err)
    if isinstance(reason, (socket.timeout, TimeoutError)):
        return "ClinicalTrials.gov did not answer in time. Try again later."
    return ("Could not reach ClinicalTrials.gov (this server may be offline or not allowed to reach the internet). "
            "The app works from its own copy meanwhile.")


def age_term(age: float | None) -> str | None:
    """An Essie expression admitting a patient of this age: each age bound holds, or the study gives none.

    Studies with no minimum (or no maximum) age are kept: ``AREA[MinimumAge]MISSING`` is the alternative of each range.
    """
    if age is None:
        return None
    if not 0 <= age <= 120:
        raise LiveUnavailable("Age must be between 0 and 120 years for a live search.")
    years = f"{age:g} years"
    return (f"(AREA[MinimumAge]RANGE[MIN, {years}] OR AREA[MinimumAge]MISSING) AND "
            f"(AREA[MaximumAge]RANGE[{years}, MAX] OR AREA[MaximumAge]MISSING)")


def _part(value: Any) -> dict[str, Any]:
    """A part of the record that should be an object; one of another shape is read as absent."""
    return value if isinstance(value, dict) else {}


def parse_status(doc: Mapping[str, Any], nct_id: str | None = None) -> LiveStatus:
    """The status part of an API v2 study record (of `nct_id`, or of the trial it names when None)."""
    protocol = _part(doc.get("protocolSection"))
    found = str(_part(protocol.get("identificationModule")).get("nctId") or "").upper()
    nct_id = found if nct_id is None else nct_id
    if found and found != nct_id:
        raise LiveUnavailable(f"ClinicalTrials.gov answered with another trial ({one_line(found, 20)}); "
                              "not used.")
    status = _part(protocol.get("statusModule"))
    code = status.get("overallStatus")
    if not code or not isinstance(code, str):
        raise LiveUnavailable(f"ClinicalTrials.gov's record of {nct_id} has no status.")
    locations = _part(protocol.get("contactsLocationsModule")).get("locations")
    sites = [loc for loc in locations if isinstance(loc, dict)] if isinstance(locations, list) else []

    def date(key: str) -> str | None:
        """The record's date as written (2024-05-01 or 2024-05), or None for anything that is not a real date."""
        value = status.get(key)
        value = value.get("date") if isinstance(value, dict) else value
        if not isinstance(value, str) or not _API_DATE.fullmatch(value := value.strip()):
            return None
        try:
            dt.date.fromisoformat(value if len(value) == 10 else f"{value}-01")
        except ValueError:
            return None
        return value

    return LiveStatus(
        nct_id=nct_id, overall_status=code.upper(),
        last_update_posted=date("lastUpdatePostDateStruct"),
        why_stopped=one_line(str(status["whyStopped"]), 300) if status.get("whyStopped") else None,
        recruiting_sites=sum(1 for loc in sites if loc.get("status") == "RECRUITING"),
        sites=len(sites), checked_at=dt.datetime.now(dt.UTC).replace(microsecond=0))


_client_lock = threading.Lock()
_clients: dict[str, LiveClient] = {}


def client() -> LiveClient:
    """This process's client for the configured API URL."""
    url = api_url()
    with _client_lock:
        if url not in _clients:
            _clients[url] = LiveClient(url)
        return _clients[url]


def live_status(nct_id: str) -> LiveStatus:
    """The trial's status on ClinicalTrials.gov now (raises LiveUnavailable, with a message, when it cannot say)."""
    if not live_enabled():
        raise LiveUnavailable("Live look-ups are switched off on this server (CTGOV_LIVE=off).")
    return client().status(nct_id)


def compare_with_copy(live: LiveStatus, our_status: str | None, copy_updated: Any) -> tuple[bool, str]:
    """(whether it differs from our copy, one plain sentence) for showing a live answer beside our copy's status."""
    now = status_words(live.overall_status) or "no status"
    ours = status_words(our_status) or "no status"
    updated = f"; record last updated {live.last_update_posted}" if live.last_update_posted else ""
    sites = (f"; {live.recruiting_sites} of its {live.sites} sites recruiting" if live.sites and live.enrolling
             else "")
    stopped = f" Why it stopped: {live.why_stopped}" if live.why_stopped and not live.enrolling else ""
    differs = canonical("status", live.overall_status or "") != canonical("status", our_status or "")
    copy = f"our copy{f' (record last updated {str(copy_updated)[:10]})' if copy_updated else ''}"
    if differs:
        return True, (f"ClinicalTrials.gov now shows “{now}” (checked {live.as_of}{updated}{sites}); {copy} says "
                      f"“{ours}”.{stopped}")
    return False, f"ClinicalTrials.gov shows “{now}” as of {live.as_of}{updated}{sites} — the same as {copy}.{stopped}"
