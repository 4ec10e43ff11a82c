"""A local stand-in for the ClinicalTrials.gov API v2 (tests never reach the internet).

It serves `/api/v2/studies/{nctId}` and `/api/v2/studies` (search) over real HTTP from given API v2 records, logs
every request it receives (arrival time, path, query), and can be scripted: the next answers may be 429 (with or
without Retry-After), 400 with a body, a slow answer, a body that is not JSON, or raw bytes that are not HTTP.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Scripted:
    status: int = 200
    body: bytes | None = None  # None: the normal answer
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    raw: bytes | None = None  # written to the socket as is, in place of an HTTP answer (a broken server)


@dataclass
class Arrival:
    at: float  # time.monotonic() when the request arrived
    path: str
    query: dict[str, list[str]]


def _years(text: str | None) -> float | None:
    m = re.match(r"\s*(\d+(?:\.\d+)?)\s*(year|month|week|day)", text or "", re.I)
    if not m:
        return None
    return float(m.group(1)) / {"year": 1, "month": 12, "week": 52.18, "day": 365.25}[m.group(2).lower()]


def _age_ok(term: str, study: dict[str, Any]) -> bool:
    """The part of Essie this fake understands: the age ranges (and their MISSING alternatives) of live.age_term."""
    elig = study.get("protocolSection", {}).get("eligibilityModule", {})
    lo, hi = _years(elig.get("minimumAge")), _years(elig.get("maximumAge"))
    m = re.search(r"AREA\[MinimumAge\]RANGE\[MIN, ([\d.]+) years\]", term)
    if m and not ((lo is not None and lo <= float(m.group(1)))
                  or (lo is None and "AREA[MinimumAge]MISSING" in term)):
        return False
    m = re.search(r"AREA\[MaximumAge\]RANGE\[([\d.]+) years, MAX\]", term)
    return not (m and not ((hi is not None and hi >= float(m.group(1)))
                           or (hi is None and "AREA[MaximumAge]MISSING" in term)))


class FakeCtgov:
    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.records = {r["protocolSection"]["identificationModule"]["nctId"]: r for r in records}
        self.script: list[Scripted] = []
        self.arrivals: list[Arrival] = []
        self._lock = threading.Lock()
        self.closing = threading.Event()  # set at shutdown: a held (slow) answer ends at once
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                parts = urlsplit(self.path)
                with fake._lock:
                    fake.arrivals.append(Arrival(time.monotonic(), parts.path, parse_qs(parts.query)))
                    step = fake.script.pop(0) if fake.script else Scripted()
                if step.raw is not None:
                    self.close_connection = True
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                        self.wfile.write(step.raw)
                    return
                if step.delay_s:  # a slow server: hold the answer (past the client's timeout), or until shutdown
                    fake.closing.wait(step.delay_s)
                status, body = (step.status, step.body) if step.body is not None or step.status != 200 else \
                    fake.answer(parts.path, parse_qs(parts.query))
                try:
                    self.send_response(status)
                    for k, v in step.headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body or b"")))
                    self.end_headers()
                    self.wfile.write(body or b"")
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api/v2"

    def answer(self, path: str, query: dict[str, list[str]]) -> tuple[int, bytes]:
        m = re.fullmatch(r"/api/v2/studies/(NCT\d{8})", path)
        if m:
            record = self.records.get(m.group(1))
            if record is None:
                return 404, b'{"message": "not found"}'
            return 200, json.dumps(record).encode()
        if path == "/api/v2/studies":
            cond = (query.get("query.cond") or [""])[0].lower()
            term = (query.get("query.term") or [""])[0]
            found = [r for r in self.records.values()
                     if (not cond or any(cond in c.lower() for c in r["protocolSection"].get(
                         "conditionsModule", {}).get("conditions", [])))
                     and _age_ok(term, r)]
            return 200, json.dumps({"studies": found, "totalCount": len(found)}).encode()
        return 400, b"unknown path"


@contextmanager
def fake_ctgov(records: list[dict[str, Any]]) -> Iterator[FakeCtgov]:
    fake = FakeCtgov(records)
    thread = threading.Thread(target=fake.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.closing.set()
        fake.server.shutdown()
        fake.server.server_close()
