"""What the process is doing while the database gets ready: named stages with counts, for the page and the log.

`runtime.get_db()` reports its work here (start the server, create the schema, load each sample file, build the
derived tables); the pages poll `PROGRESS.snapshot()` to draw a progress bar, and every stage is also written to
the server log (stderr) with its counts and seconds, so a first start can be watched from either side.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

_log = logging.getLogger("trial_landscape.startup")
LOG_EVERY_S = 2.0  # a running stage logs its count at most this often


def _ensure_log_handler() -> None:
    # Streamlit configures only its own loggers, so ours would be dropped below WARNING: give it a stderr handler
    # unless the host (the CLI, pytest) has configured logging itself.
    if _log.handlers or logging.getLogger().handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s startup: %(message)s", "%H:%M:%S"))
    _log.addHandler(handler)
    _log.setLevel(logging.INFO)
    _log.propagate = False


@dataclass(frozen=True)
class Stage:
    """One named step: how far it is (done of total, total None when unknown), when it began and ended."""

    name: str
    unit: str = ""
    done: int = 0
    total: int | None = None
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None

    @property
    def seconds(self) -> float:
        return (self.finished or time.monotonic()) - self.started

    @property
    def fraction(self) -> float | None:
        if self.finished is not None:
            return 1.0
        if not self.total:
            return None
        return min(1.0, self.done / self.total)

    def describe(self) -> str:
        """'Loading JSON studies — 800 of 1,442 studies' / '… — 1,442 studies, 3.1 s' when finished."""
        unit = f" {self.unit}" if self.unit else ""
        if self.finished is not None:
            count = f"{self.done:,}{unit}, " if self.total is not None or self.done else ""
            return f"{self.name} — {count}{self.seconds:.1f} s"
        if self.total is not None:
            return f"{self.name} — {self.done:,} of {self.total:,}{unit}"
        if self.done:
            return f"{self.name} — {self.done:,}{unit}"
        return f"{self.name}…"


class Progress:
    """Thread-safe list of stages of this process's start; one current stage at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stages: list[Stage] = []
        self._logged_at = 0.0

    def snapshot(self) -> list[Stage]:
        """The stages so far (finished ones first, the running one last)."""
        with self._lock:
            return list(self._stages)

    @contextlib.contextmanager
    def stage(self, name: str, total: int | None = None, unit: str = "",
              announce: bool = True) -> Iterator[Callable[[int], None]]:
        """Run one stage; yields `advance(done)` to report the count so far.

        announce=False: log the stage only if it turns out to take a second or more (a later start's routine
        steps stay out of every command's output).
        """
        _ensure_log_handler()
        with self._lock:
            self._stages.append(Stage(name, unit, 0, total))
            index = len(self._stages) - 1
            self._logged_at = time.monotonic()
        if announce:
            _log.info("%s", self._stages[index].describe())

        def advance(done: int) -> None:
            with self._lock:
                self._stages[index] = replace(self._stages[index], done=done)
                now = time.monotonic()
                due = now - self._logged_at >= LOG_EVERY_S
                if due:
                    self._logged_at = now
            if due:
                _log.info("%s", self._stages[index].describe())

        failed = False
        try:
            yield advance
        except BaseException:
            failed = True
            raise
        finally:
            with self._lock:
                stage = self._stages[index]
                done = stage.total if stage.total is not None and not failed else stage.done
                self._stages[index] = replace(stage, done=done, finished=time.monotonic())
            if announce or failed or self._stages[index].seconds >= 1.0:
                _log.info("%s%s", self._stages[index].describe(), " (failed)" if failed else "")

    def clear(self) -> None:
        """Forget every stage (tests, a retried start)."""
        with self._lock:
            self._stages.clear()


PROGRESS = Progress()


class Starter:
    """Runs the database start once per process in a background thread, so pages can draw its progress."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._done = threading.Event()
        self.error: BaseException | None = None

    def start(self, work: Callable[[], object]) -> None:
        """Begin `work` unless it is running or has succeeded; a failed start is tried again."""
        with self._lock:
            if self._thread is not None and (self._thread.is_alive() or self.error is None):
                return
            self.error = None
            self._done.clear()
            PROGRESS.clear()

            def run() -> None:
                try:
                    work()
                except BaseException as err:  # noqa: BLE001 - handed to the waiting page, which shows it
                    self.error = err
                finally:
                    self._done.set()

            self._thread = threading.Thread(target=run, name="database-start", daemon=True)
            self._thread.start()

    def wait(self, seconds: float) -> bool:
        """Wait up to `seconds` for the start to end; True once it has (successfully or not)."""
        return self._done.wait(seconds)


STARTER = Starter()


# ---- visitors first: a start's background work waits until the pages have been quiet for a while ----------
_last_page = [time.monotonic()]


def page_activity() -> None:
    """A page of this process started or ended (services.ui calls it); see wait_until_quiet."""
    _last_page[0] = time.monotonic()


def wait_until_quiet(quiet_s: float, *, at_most_s: float = float("inf"),
                     unless: threading.Event | None = None) -> None:
    """Return once no page has started or ended for `quiet_s` seconds (a deadline that moves with every page), or
    after `at_most_s` whatever the pages do, or as soon as `unless` is set.

    For the start's heavy background work (the gazetteer's read, the start cache's rebuild): a page's script ends
    seconds before its browser has fetched the frontend's scripts from this process and drawn the charts, on the
    same cores.
    """
    give_up = time.monotonic() + at_most_s
    stop = unless or threading.Event()
    while (wait := min(quiet_s - max(0.0, time.monotonic() - _last_page[0]), give_up - time.monotonic())) > 0:
        if stop.wait(wait):
            return
