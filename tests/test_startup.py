"""The start's progress: named stages with counts, for the page and the log; a failed start is retried."""

from __future__ import annotations

import logging

import pytest

from services.data import runtime, startup


def test_startup_stage_counts_and_log(caplog):
    progress = startup.Progress()
    with caplog.at_level(logging.INFO, logger="trial_landscape.startup"):
        with progress.stage("Loading things", total=3, unit="records") as advance:
            advance(2)
            (running,) = progress.snapshot()
            assert running.finished is None
            assert running.describe() == "Loading things — 2 of 3 records"
            assert running.fraction == pytest.approx(2 / 3)
    (done,) = progress.snapshot()
    assert done.finished is not None and done.done == 3 and done.fraction == 1.0
    assert done.describe().startswith("Loading things — 3 records, ")
    assert any("Loading things — 3 records" in r.getMessage() for r in caplog.records)


def test_startup_failed_stage_keeps_its_count_and_says_so(caplog):
    progress = startup.Progress()
    with caplog.at_level(logging.INFO, logger="trial_landscape.startup"), pytest.raises(RuntimeError):
        with progress.stage("Saving", total=10, unit="studies") as advance:
            advance(4)
            raise RuntimeError("disk full")
    (stage,) = progress.snapshot()
    assert stage.done == 4 and stage.finished is not None
    assert any(r.getMessage().endswith("(failed)") for r in caplog.records)


def test_startup_quiet_stage_is_not_logged_when_short(caplog):
    progress = startup.Progress()
    with caplog.at_level(logging.INFO, logger="trial_landscape.startup"):
        with progress.stage("Starting the server", announce=False):
            pass
    assert not [r for r in caplog.records if "Starting the server" in r.getMessage()]


def test_startup_starter_retries_after_a_failure():
    starter = startup.Starter()
    calls = []

    def fail() -> None:
        calls.append("fail")
        raise ValueError("no")

    starter.start(fail)
    assert starter.wait(30)
    assert isinstance(starter.error, ValueError)
    starter.start(lambda: calls.append("ok"))
    assert starter.wait(30) and starter.error is None
    starter.start(lambda: calls.append("again"))  # succeeded once: not run again
    assert starter.wait(30) and calls == ["fail", "ok"]


def test_startup_sample_record_counts_match_the_files():
    for _, path in runtime.SAMPLE_FILES:
        import gzip

        with gzip.open(path, "rt", encoding="utf-8") as fh:
            expected = sum(1 for line in fh if line.strip())
        assert runtime._record_count(path) == expected


def test_startup_schema_fingerprint_changes_with_the_files(monkeypatch, tmp_path):
    first = tmp_path / "001_a.sql"
    first.write_text("SELECT 1;")
    monkeypatch.setattr(runtime, "schema_files", lambda: [first])
    before = runtime.schema_fingerprint()
    first.write_text("SELECT 2;")
    assert runtime.schema_fingerprint() != before
