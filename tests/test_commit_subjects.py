"""The CI check of commit subjects (devtools/commit_subjects.py) and the commit-msg hook."""

from __future__ import annotations

import subprocess
from pathlib import Path

from devtools.commit_subjects import LIMIT, long_subjects

ROOT = Path(__file__).resolve().parents[1]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def test_commit_subjects_over_the_limit_are_listed(tmp_path, monkeypatch):
    git(tmp_path, "init", "-q")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "base")
    base = git(tmp_path, "rev-parse", "HEAD").strip()
    for subject in ("short and clear", "x" * (LIMIT + 1), "y" * LIMIT):
        git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", subject)
    monkeypatch.chdir(tmp_path)
    assert [line.split(" ", 1)[1] for line in long_subjects(base)] == ["x" * (LIMIT + 1)]


def test_commit_msg_hook_refuses_a_long_subject(tmp_path):
    hook = ROOT / "devtools" / "hooks" / "commit-msg"
    ok, bad = tmp_path / "ok", tmp_path / "bad"
    ok.write_text("Fix the thing\n\nWhy it was wrong.\n")
    bad.write_text("z" * (LIMIT + 1) + "\n")
    assert subprocess.run([str(hook), str(ok)]).returncode == 0
    result = subprocess.run([str(hook), str(bad)], capture_output=True, text=True)
    assert result.returncode == 1 and "73 characters" in result.stderr
