"""The settings table (services/settings.py): every variable declared once, bad values stop the start with the
variable's name, the README's tables are generated from it, and no other module reads the environment."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from services import settings

ROOT = Path(__file__).resolve().parents[1]

# One value per setting that must be refused (and say so by name).
BAD = {
    "STATEMENT_TIMEOUT_MS": "0", "DB_POOL_SIZE": "6", "TRIAL_LANDSCAPE_FACET_CACHE": "maybe",
    "TRIAL_LANDSCAPE_ENGINE": "duckdb", "TRIAL_LANDSCAPE_IMPORT_MAX_BYTES": "12",
    "TRIAL_LANDSCAPE_IMPORT_MAX_LINE_BYTES": "1 MB", "SQL_MAX_ROWS": "many", "SQL_TIMEOUT_MS": "50",
    "SQL_MAX_BYTES": "1e12", "SQL_MAX_VALUE_BYTES": "-1", "SQL_CONCURRENT": "9", "SQL_MAX_MEMORY_MB": "10",
    "SQL_MAX_TEMP_MB": "0", "ANTHROPIC_BASE_URL": "api.anthropic.com", "CTGOV_API_URL": "ftp://x",
    "CTGOV_LIVE": "sometimes", "CTGOV_LIVE_BUDGET": "0", "APP_PASSWORD_NETWORK_TRIES": "3",
    "TRUSTED_PROXY": "10.0.0.1, proxy.local", "ASSISTANT_MESSAGE_LIMIT": "0",
    "ASSISTANT_MESSAGE_WINDOW_S": "soon", "ASSISTANT_NETWORK_LIMIT": "x", "ASSISTANT_GLOBAL_LIMIT": "-5",
    "MODEL_CONCURRENCY": "0", "MODEL_WAIT_S": "nan", "API_RATE": "fast", "API_CONCURRENT": "65",
    "API_WAIT_S": "-1",
    "ASSISTANT_SESSION_DAYS": "99999",
}
# Free text (paths, URLs of databases, secrets): any value is taken as given.
FREE = {"DATABASE_URL", "APP_DATABASE_URL", "TRIAL_LANDSCAPE_DATA_DIR", "TRIAL_LANDSCAPE_CACHE_DIR",
        "XDG_CACHE_HOME",
        "ANTHROPIC_API_KEY", "CHROMIUM_PATH", "APP_PASSWORD", "TRIAL_LANDSCAPE_CACHE_BUILD_URL"}


def test_settings_every_declared_setting_has_a_bad_value_or_is_free_text():
    assert set(BAD) | FREE == set(settings.NAMES)
    assert len(settings.NAMES) == len(set(settings.NAMES))


@pytest.mark.parametrize("name", sorted(BAD))
def test_settings_a_bad_value_is_refused_naming_the_variable_and_what_it_allows(name):
    with pytest.raises(settings.SettingsError) as err:
        settings.read({name: BAD[name]})
    said = str(err.value)
    assert said.startswith(f"{name}={BAD[name]!r} is not allowed: it must be {settings.allowed(name)}")
    assert "unset it for the default" in said


def test_settings_defaults_and_good_values():
    default = settings.read({})
    assert (default.sql_max_rows, default.statement_timeout_ms, default.ctgov_live, default.engine) == (
        10_000, 15_000, True, None)
    given = settings.read({"SQL_MAX_ROWS": " 250 ", "CTGOV_LIVE": "off", "TRIAL_LANDSCAPE_ENGINE": "sql",
                           "ASSISTANT_MESSAGE_LIMIT": "7", "CTGOV_API_URL": "http://127.0.0.1:9/api/v2/",
                           "DB_POOL_SIZE": ""})  # empty counts as unset
    assert (given.sql_max_rows, given.ctgov_live, given.engine, given.network_limit, given.ctgov_api_url,
            given.db_pool_size) == (250, False, "sql", 21, "http://127.0.0.1:9/api/v2", 5)


def test_settings_secrets_are_never_shown():
    config = settings.read({"ANTHROPIC_API_KEY": "sk-hunter2", "APP_PASSWORD": "s3cret"})
    assert "hunter2" not in repr(config) and "s3cret" not in repr(config)
    assert settings.shown_values(config)["ANTHROPIC_API_KEY"] == "(set, hidden)"
    assert settings.shown_values(settings.read({"APP_PASSWORD": "s3cret"}))["APP_PASSWORD"] == "(set, hidden)"


def test_settings_current_follows_a_changed_environment(monkeypatch):
    monkeypatch.setenv("SQL_MAX_ROWS", "123")
    assert settings.current().sql_max_rows == 123
    monkeypatch.setenv("SQL_MAX_ROWS", "124")
    assert settings.current().sql_max_rows == 124


def test_settings_readme_tables_are_generated_from_the_table():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.count("<!-- settings: ") >= 3  # two tables and their ends
    assert settings.readme_with_tables(readme) == readme, "run: python -m services settings --readme"
    for name in settings.NAMES:
        if name != "TRIAL_LANDSCAPE_CACHE_BUILD_URL":  # internal hand-off between our own processes
            assert f"| `{name}` |" in readme


def test_settings_only_the_settings_module_reads_the_environment():
    found = [f"{path.relative_to(ROOT)}:{n}" for path in sorted((ROOT / "services").rglob("*.py"))
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"os\.environ|os\.getenv|getenv\(", line) and path.name != "settings.py"]
    assert found == []


@pytest.mark.parametrize("argv", [["-m", "services", "settings"], ["-c", "import app"]])
def test_settings_a_bad_value_stops_the_start_with_its_name(argv):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(ROOT), "SQL_CONCURRENT": "lots"}
    done = subprocess.run([sys.executable, *argv], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0
    assert "SQL_CONCURRENT='lots' is not allowed: it must be a whole number from 1 to 5" in done.stderr
