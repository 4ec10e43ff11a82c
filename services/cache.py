"""A small thread-safe TTL cache with single flight: concurrent callers of one key share one computation.

Why not Streamlit's caches: the dashboard services below the UI layer (stats, charts, map decks) serve the CLI
too and may not import Streamlit, and the pages' one cache keys on Filters by Python's hash, not Streamlit's.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

V = TypeVar("V")


@dataclass(frozen=True)
class CacheStats:
    """Counters since the cache was made: fresh hits, computations, callers that waited for another's result."""

    hits: int
    computations: int
    shared: int
    entries: int


@dataclass
class _Slot(Generic[V]):
    lock: threading.Lock
    value: V | None = None
    expires_at: float = 0.0
    filled: bool = False


class SingleFlightCache(Generic[V]):
    """Values by key for ttl_s seconds (at most max_entries, least recently used dropped first).

    A miss takes the key's own lock, so callers that ask for the same key meanwhile wait and get the
    value the first one computed; other keys proceed in parallel. Errors are not cached.
    """

    def __init__(self, ttl_s: float, max_entries: int = 256, *, clock: Callable[[], float] = time.monotonic) -> None:
        if ttl_s <= 0 or max_entries < 1:
            raise ValueError("ttl_s must be > 0 and max_entries ≥ 1")
        self.ttl_s = float(ttl_s)
        self.max_entries = max_entries
        self._clock = clock
        self._slots: OrderedDict[Hashable, _Slot[V]] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = 0
        self._computations = 0
        self._shared = 0

    def _slot(self, key: Hashable) -> _Slot[V]:
        with self._lock:
            slot = self._slots.get(key)
            if slot is None:
                self._evict()
                slot = _Slot(threading.Lock())
                self._slots[key] = slot
            self._slots.move_to_end(key)
            return slot

    def _evict(self) -> None:
        # Only slots nobody is computing are dropped; a busy slot stays until its computation ends.
        for old_key in list(self._slots):
            if len(self._slots) < self.max_entries:
                break
            if not self._slots[old_key].lock.locked():
                del self._slots[old_key]

    def _fresh(self, slot: _Slot[V]) -> bool:
        return slot.filled and self._clock() < slot.expires_at

    def get_or_compute(self, key: Hashable, compute: Callable[[], V], *,
                       keep: Callable[[V], bool] | None = None) -> V:
        """The cached value of key, else compute() once for everyone asking now; keep(value) False = not stored."""
        slot = self._slot(key)
        if self._fresh(slot):
            with self._lock:
                self._hits += 1
            return slot.value  # type: ignore[return-value]
        waited = slot.lock.locked()
        with slot.lock:
            if self._fresh(slot):
                with self._lock:
                    self._shared += 1 if waited else 0
                    self._hits += 0 if waited else 1
                return slot.value  # type: ignore[return-value]
            value = compute()
            with self._lock:
                self._computations += 1
            if keep is None or keep(value):
                slot.value = value
                slot.expires_at = self._clock() + self.ttl_s
                slot.filled = True
            return value

    def clear(self) -> None:
        """Forget every value (computations in progress still finish and store theirs)."""
        with self._lock:
            for slot in self._slots.values():
                slot.filled = False
                slot.value = None

    def stats(self) -> CacheStats:
        """Counters and the number of keys held."""
        with self._lock:
            return CacheStats(self._hits, self._computations, self._shared, len(self._slots))
