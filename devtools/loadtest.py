"""Load test: simulated concurrent users (threads) with random filters against the dashboard service and,
optionally, a running Streamlit server on this machine (health endpoint and page fetch). Loopback only;
every loop is bounded by a deadline and a request cap.
"""

from __future__ import annotations

import ipaddress
import math
import random
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from services.dashboard.filters import Filters
from services.errors import BadInput, TrialLandscapeError

MAX_USERS = 200
MAX_SECONDS = 600.0
MAX_REQUESTS_PER_USER = 100_000
HTTP_TIMEOUT_S = 10.0

# What people ask for, roughly by popularity (the sample's topics first); a draw mixes a few fields.
CONDITIONS = ("diabetes", "lung cancer", "alzheimer", "leukemia", "lymphoma", "prostate cancer", "breast cancer",
              "asthma", "bladder cancer", "multiple myeloma", "obesity", "kidney stones")
STATUS_CHOICES: tuple[tuple[str, ...] | None, ...] = (None, None, (), ("COMPLETED",), ("RECRUITING",))
PHASE_CHOICES = (("PHASE1",), ("PHASE2",), ("PHASE3",), ("PHASE2", "PHASE3"))
COUNTRIES = ("United States", "China", "France", "Germany", "Canada")


def random_filters(rng: random.Random) -> Filters:
    """A plausible dashboard filter: mostly a condition, sometimes status, phase, country, age or sex."""
    values: dict[str, Any] = {}
    if rng.random() < 0.85:
        # earlier conditions are asked for more often (weights 12, 11, … 1)
        values["condition"] = rng.choices(CONDITIONS, weights=range(len(CONDITIONS), 0, -1))[0]
    status = rng.choice(STATUS_CHOICES)
    if status is not None:
        values["status"] = status
    if rng.random() < 0.25:
        values["phase"] = rng.choice(PHASE_CHOICES)
    if rng.random() < 0.2:
        values["country"] = (rng.choice(COUNTRIES),)
    if rng.random() < 0.15:
        values["age"] = float(rng.choice((8, 35, 50, 65, 80)))
    if rng.random() < 0.15:
        values["sex"] = rng.choice(("FEMALE", "MALE"))
    return Filters(**values)


def view_pool(count: int, seed: int = 7) -> list[Filters]:
    """`count` distinct filters drawn with random_filters: the views a team keeps coming back to."""
    if count < 1:
        raise BadInput("--views must be at least 1.")
    rng = random.Random(seed)
    views: dict[Filters, None] = {}
    for _ in range(count * 200):
        views.setdefault(random_filters(rng))
        if len(views) == count:
            break
    return list(views)


def pick_view(views: Sequence[Filters], rng: random.Random) -> Filters:
    """A view by popularity: the k-th view of the pool is asked for in proportion to 1/k (Zipf)."""
    return rng.choices(views, weights=[1 / (k + 1) for k in range(len(views))])[0]


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0–100) with linear interpolation between closest ranks; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass
class TargetStats:
    """Latencies and errors of one kind of request."""

    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """requests, errors, p50_s, p95_s, max_s (and a few error messages)."""
        out: dict[str, Any] = {
            "requests": len(self.latencies) + self.errors,
            "errors": self.errors,
            "p50_s": round(percentile(self.latencies, 50), 4),
            "p95_s": round(percentile(self.latencies, 95), 4),
            "max_s": round(max(self.latencies, default=0.0), 4),
        }
        if self.error_samples:
            out["error_samples"] = self.error_samples
        return out


Request = Callable[[random.Random], None]


def check_loopback(url: str) -> str:
    """The URL without a trailing slash if its host is a loopback address; BadInput otherwise."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadInput(f"Not an http:// URL: {url!r}.")
    host = parts.hostname
    if host != "localhost":
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise BadInput(f"The load test only talks to this machine (127.0.0.1, ::1, localhost), not {host!r}.")
    return url.rstrip("/")


def http_get(url: str, timeout_s: float = HTTP_TIMEOUT_S) -> int:
    """GET a loopback URL and read the whole body; raise OSError for a status other than 200."""
    with urllib.request.urlopen(url, timeout=timeout_s) as response:  # noqa: S310 - loopback checked by caller
        response.read()
        if response.status != 200:
            raise OSError(f"HTTP {response.status} from {url}")
        return int(response.status)


def dashboard_request(views: Sequence[Filters] | None = None, use_cache: bool = True) -> Request:
    """One user action on the Explore page: the dashboard for a view of the pool (Zipf popularity), or for a
    fresh random filter when there is no pool; through the shared cache unless use_cache is False.
    """
    from services.dashboard import stats

    def run(rng: random.Random) -> None:
        f = pick_view(views, rng) if views else random_filters(rng)
        result = stats.cached_dashboard(f) if use_cache else stats.dashboard(f)
        if result.errors:
            raise TrialLandscapeError(f"facets failed: {sorted(result.errors)}")

    return run


def http_requests(base_url: str) -> dict[str, Request]:
    """The Streamlit server's health endpoint and its page (the HTML shell every visit loads)."""
    base = check_loopback(base_url)

    def health(rng: random.Random) -> None:
        http_get(f"{base}/_stcore/health")

    def page(rng: random.Random) -> None:
        http_get(f"{base}/")

    return {"http_health": health, "http_page": page}


def run_load(targets: dict[str, Request], *, users: int, seconds: float, think_s: float = 0.5,
             seed: int = 7, max_requests_per_user: int = MAX_REQUESTS_PER_USER) -> dict[str, Any]:
    """Run `users` threads for `seconds`; each repeatedly does every target once, then pauses a random
    think time (uniform 0 … 2×think_s). Returns totals (requests, errors, p50_s, p95_s) and per-target stats.
    """
    if not 1 <= users <= MAX_USERS:
        raise BadInput(f"--users must be between 1 and {MAX_USERS}.")
    if not 0 < seconds <= MAX_SECONDS:
        raise BadInput(f"--seconds must be more than 0 and at most {MAX_SECONDS:.0f}.")
    if think_s < 0:
        raise BadInput("--think-ms cannot be negative.")
    stats = {name: TargetStats() for name in targets}
    lock = threading.Lock()
    started = time.monotonic()
    deadline = started + seconds

    def user(index: int) -> None:
        rng = random.Random(seed * 1_000_003 + index)
        # users arrive over the first second instead of all at the same instant
        time.sleep(rng.uniform(0, min(1.0, seconds / 10)))
        done = 0
        while time.monotonic() < deadline and done < max_requests_per_user:
            for name, request in targets.items():
                t0 = time.perf_counter()
                try:
                    request(rng)
                except (TrialLandscapeError, OSError, urllib.error.URLError) as err:
                    with lock:
                        stats[name].errors += 1
                        if len(stats[name].error_samples) < 5:
                            stats[name].error_samples.append(f"{type(err).__name__}: {str(err)[:200]}")
                else:
                    elapsed = time.perf_counter() - t0
                    with lock:
                        stats[name].latencies.append(elapsed)
                done += 1
            pause = rng.uniform(0, 2 * think_s)
            if time.monotonic() + pause >= deadline:
                break  # the next action would start after the end: this user is done
            time.sleep(pause)

    threads = [threading.Thread(target=user, args=(i,), name=f"load-user-{i}", daemon=True) for i in range(users)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=max(1.0, deadline - time.monotonic()) + 60)
    elapsed = time.monotonic() - started
    everything = TargetStats()
    for s in stats.values():
        everything.latencies.extend(s.latencies)
        everything.errors += s.errors
    total = everything.summary()
    total.pop("error_samples", None)
    return {
        **total,
        "users": users,
        "seconds": round(elapsed, 2),
        "think_s": think_s,
        "requests_per_s": round(total["requests"] / elapsed, 2) if elapsed else 0.0,
        "unfinished_users": sum(t.is_alive() for t in threads),
        "targets": {name: s.summary() for name, s in stats.items()},
    }
