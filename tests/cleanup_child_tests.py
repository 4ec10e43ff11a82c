"""Run only by test_session_cleanup.py in a child pytest: servers and folders a run must not leave behind.

Not named test_*, so a normal run does not collect it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from services.data import embedded


def _server(scratch_dir: Path) -> str:
    return embedded.start(scratch_dir / "pg")


def test_child_starts_a_server_and_passes(scratch_dir):
    assert _server(scratch_dir).startswith("postgresql://")
    (scratch_dir / "made-a-file").write_text("x")


@pytest.fixture()
def broken_fixture(scratch_dir):
    _server(scratch_dir)
    raise RuntimeError("a fixture that fails after starting a server")


def test_child_with_a_failing_fixture(broken_fixture):
    pass


def test_child_waits_to_be_interrupted(scratch_dir):
    """Starts a server, says so in the file named by CLEANUP_READY_FILE, then waits until the parent interrupts."""
    _server(scratch_dir)
    ready = os.environ.get("CLEANUP_READY_FILE")
    if not ready:
        return
    Path(ready).write_text(str(os.getpid()))
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:  # the parent sends SIGINT long before this ends
        time.sleep(0.2)
    raise AssertionError("was not interrupted")
