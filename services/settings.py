"""Every setting of Trial Landscape, declared once: its environment variable, type, default, bounds and help.

The only module that reads the process environment. `current()` validates every declared variable together
(pydantic) and caches the result until one of them changes, so the app reads them once at start and a test
that sets a variable sees it; a bad value raises `SettingsError` naming the variable and what is allowed —
never a silent fallback to the default. `app.py` and `python -m services` call `check()` first, so a bad value
stops the start. The README's configuration tables are generated from this table (`markdown_table`), and a
test checks that they agree.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from services.errors import BadInput

GROUPS = ("data", "console", "assistant", "live", "hosting", "internal")  # README tables, in this order
_KiB, _MiB, _GiB = 1024, 1024**2, 1024**3


def _setting(default: Any, help: str, group: str, *, shown: str | None = None, **bounds: Any) -> Any:
    """One declared setting: `shown` is the default as the README states it (when not the literal value)."""
    return Field(default, description=help, json_schema_extra={"group": group, "shown": shown}, **bounds)


class Settings(BaseModel):
    """The settings table (field alias = environment variable). Empty values count as unset."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=False)

    # ---- where the data is
    database_url: str | None = _setting(
        None,
        "`postgresql://…` of a database with AACT's `ctgov` schema (an AACT restore, the AACT "
        "cloud, any PostgreSQL)",
        "data",
        shown="unset → embedded server",
        alias="DATABASE_URL",
    )
    app_database_url: str | None = _setting(
        None,
        "where app state (assistant sessions) lives when `DATABASE_URL` is read-only",
        "data",
        shown="the embedded server",
        alias="APP_DATABASE_URL",
    )
    data_dir: Path | None = _setting(
        None,
        "folder of the embedded server's data",
        "data",
        shown="`.data/`",
        alias="TRIAL_LANDSCAPE_DATA_DIR",
    )
    cache_dir: Path | None = _setting(
        None,
        "files built from installed packages (the offline gazetteer), shared by every data folder",
        "data",
        shown="`$XDG_CACHE_HOME/trial-landscape` or `~/.cache/trial-landscape`",
        alias="TRIAL_LANDSCAPE_CACHE_DIR",
    )
    xdg_cache_home: Path | None = _setting(
        None,
        "the XDG base folder for caches, used when `TRIAL_LANDSCAPE_CACHE_DIR` is unset",
        "data",
        shown="`~/.cache`",
        alias="XDG_CACHE_HOME",
    )
    statement_timeout_ms: int = _setting(
        15_000,
        "default statement timeout of every query (milliseconds; every query needs one)",
        "data",
        ge=1,
        alias="STATEMENT_TIMEOUT_MS",
    )
    db_pool_size: int = _setting(
        5,
        "connection pool size (the AACT cloud allows 10 connections per account; we never use more than 5)",
        "data",
        ge=1,
        le=5,
        alias="DB_POOL_SIZE",
    )
    facet_cache: bool = _setting(
        True,
        "`0` turns off the in-process engine's start cache: its arrays, written once per import "
        "generation next to the database (`<data dir>/facet-cache/`; for an external database under "
        "`TRIAL_LANDSCAPE_CACHE_DIR`) and memory-mapped at start, so a restart has its first dashboard in "
        "about a "
        "second instead of after a load by COPY. `python -m services import …` and `synth` write the new "
        "data's "
        "cache themselves; without a current cache the server answers from SQL while the arrays load in the "
        "background, then writes the cache",
        "data",
        shown="on",
        alias="TRIAL_LANDSCAPE_FACET_CACHE",
    )
    engine: Literal["memory", "sql"] | None = _setting(
        None,
        "the engine that computes every count, chart, map and trials table: unset chooses `memory` (an "
        "in-process columnar copy loaded once per process) when the derived tables exist, else `sql` "
        "(queries on AACT's base tables, e.g. a read-only AACT); `sql` forces the base-table queries",
        "data",
        shown="memory when possible",
        alias="TRIAL_LANDSCAPE_ENGINE",
    )
    import_max_bytes: int = _setting(
        16 * _GiB,
        "decompressed bytes one import may read in all (a full AACT export is about 10 GB "
        "unpacked); "
        "importers read only regular files, and a zip member that claims to expand over 200-fold (above 8 "
        "MiB) is refused with a message that quotes nothing from the file",
        "data",
        shown="17179869184 (16 GiB)",
        ge=_KiB,
        alias="TRIAL_LANDSCAPE_IMPORT_MAX_BYTES",
    )
    import_max_line_bytes: int = _setting(
        32 * _MiB,
        "longest line of an imported file, and largest JSON file inside a zip",
        "data",
        shown="33554432 (32 MiB)",
        ge=_KiB,
        alias="TRIAL_LANDSCAPE_IMPORT_MAX_LINE_BYTES",
    )

    # ---- the SQL console
    sql_max_rows: int = _setting(
        10_000, "row cap of the SQL console", "console", ge=1, le=1_000_000, alias="SQL_MAX_ROWS"
    )
    sql_timeout_ms: int = _setting(
        30_000,
        "time limit of one console query in milliseconds — it covers the whole query, not each fetched batch",
        "console",
        ge=100,
        le=3_600_000,
        alias="SQL_TIMEOUT_MS",
    )
    sql_max_bytes: int = _setting(
        5_000_000,
        "bytes of one console result, measured by the database before rows are sent: past it "
        "the query stops and the rows so far are shown",
        "console",
        ge=1_000,
        le=1_000_000_000,
        alias="SQL_MAX_BYTES",
    )
    sql_max_value_bytes: int = _setting(
        1_000_000,
        "bytes of any single value in a console result; a larger value stops the query with a message",
        "console",
        ge=100,
        le=1_000_000_000,
        alias="SQL_MAX_VALUE_BYTES",
    )
    sql_concurrent: int = _setting(
        2,
        "console queries running at once per process, on the console's own small pool",
        "console",
        ge=1,
        le=5,
        alias="SQL_CONCURRENT",
    )
    sql_max_memory_mb: int = _setting(
        500,
        "private memory of one console query's server process (measured from /proc every 0.1 s and the "
        "query cancelled past it — only where the server runs on this machine)",
        "console",
        ge=50,
        le=1_000_000,
        alias="SQL_MAX_MEMORY_MB",
    )
    sql_max_temp_mb: int = _setting(
        500,
        "temporary files of one console query (`temp_file_limit`, where the database user may set it)",
        "console",
        ge=1,
        le=1_000_000,
        alias="SQL_MAX_TEMP_MB",
    )

    # ---- the assistant
    anthropic_api_key: SecretStr | None = _setting(
        None,
        "enables the Claude assistant; without it the assistant runs in guided mode",
        "assistant",
        shown="unset",
        alias="ANTHROPIC_API_KEY",
    )
    anthropic_base_url: str = _setting(
        "https://api.anthropic.com",
        "another address for the Messages API (a proxy; the tests' local fake server)",
        "assistant",
        shown="Anthropic's",
        alias="ANTHROPIC_BASE_URL",
    )
    chromium_path: Path | None = _setting(
        None,
        "the Chromium that prints the assistant's report as PDF",
        "assistant",
        shown="`chromium` on the PATH",
        alias="CHROMIUM_PATH",
    )

    # ---- live look-ups on ClinicalTrials.gov
    ctgov_api_url: str = _setting(
        "https://clinicaltrials.gov/api/v2",
        "ClinicalTrials.gov API v2 for live status look-ups (the "
        '"Check the '
        'status on ClinicalTrials.gov now" button and `python -m services live`); tests point it at a local '
        "fake server",
        "live",
        alias="CTGOV_API_URL",
    )
    ctgov_live: bool = _setting(
        True,
        "`off` hides the live look-up button and refuses look-ups (a server with no internet access)",
        "live",
        shown="on",
        alias="CTGOV_LIVE",
    )
    ctgov_live_budget: int = _setting(
        120,
        "live look-ups per hour and server process; requests are also spaced ≥ 1.5 s apart, back off "
        "on HTTP 429 and give up after 4 tries with a message",
        "live",
        ge=1,
        le=100_000,
        alias="CTGOV_LIVE_BUDGET",
    )

    # ---- a hosted, shared instance
    app_password: SecretStr | None = _setting(
        None,
        "shared password: when set (here or in Streamlit's secrets), a password gate before any page",
        "hosting",
        shown="unset = open",
        alias="APP_PASSWORD",
    )
    app_password_network_tries: int = _setting(
        30,
        "wrong passwords from one network address before it waits too (a flood cap)",
        "hosting",
        ge=10,
        le=100_000,
        alias="APP_PASSWORD_NETWORK_TRIES",
    )
    trusted_proxy: str = _setting(
        "",
        "reverse proxies (addresses or networks, comma-separated) whose `X-Forwarded-For` names the "
        "visitor's address",
        "hosting",
        shown="none",
        alias="TRUSTED_PROXY",
    )
    assistant_message_limit: int = _setting(
        20,
        "messages one browser (its cookie) may send to the assistant per window, counted in PostgreSQL "
        '(`app.limit_events`): shared by every process, not reset by "New session"',
        "hosting",
        ge=1,
        le=1_000_000,
        alias="ASSISTANT_MESSAGE_LIMIT",
    )
    assistant_message_window_s: float = _setting(
        600.0,
        "the sliding window of the message limits, in seconds",
        "hosting",
        shown="600",
        ge=1,
        le=31_536_000,
        alias="ASSISTANT_MESSAGE_WINDOW_S",
    )
    assistant_network_limit: int | None = _setting(
        None,
        "the same window's cap per network address (fresh browsers from one address)",
        "hosting",
        shown="3 × `ASSISTANT_MESSAGE_LIMIT`",
        ge=1,
        le=1_000_000,
        alias="ASSISTANT_NETWORK_LIMIT",
    )
    assistant_global_limit: int = _setting(
        500,
        "the same window's cap for the whole instance",
        "hosting",
        ge=1,
        le=100_000_000,
        alias="ASSISTANT_GLOBAL_LIMIT",
    )
    model_concurrency: int = _setting(
        4, "model calls running at once in one process", "hosting", ge=1, le=1_000, alias="MODEL_CONCURRENCY"
    )
    model_wait_s: float = _setting(
        30.0,
        'how long a message waits for a free model slot before "busy, try again", in seconds',
        "hosting",
        shown="30",
        ge=0,
        le=3_600,
        alias="MODEL_WAIT_S",
    )
    assistant_session_days: int = _setting(
        30,
        "how long an unused assistant session is kept, in days",
        "hosting",
        ge=1,
        le=3650,
        alias="ASSISTANT_SESSION_DAYS",
    )

    api_rate: int = _setting(
        120,
        "URL API (`/api/v1/…`) requests per minute per client address",
        "hosting",
        ge=1,
        le=100_000,
        alias="API_RATE",
    )
    api_concurrent: int = _setting(
        4, "URL API requests answered at once per process", "hosting", ge=1, le=64, alias="API_CONCURRENT"
    )
    api_wait_s: float = _setting(
        10.0,
        "how long an API request waits for a free slot before 503 busy, in seconds",
        "hosting",
        shown="10",
        ge=0,
        le=300,
        alias="API_WAIT_S",
    )

    # ---- internal hand-offs between our own processes (not for operators)
    cache_build_url: SecretStr | None = _setting(
        None,
        "the database of a start-cache build in a child process (never on its command line)",
        "internal",
        alias="TRIAL_LANDSCAPE_CACHE_BUILD_URL",
    )

    @field_validator("trusted_proxy")
    @classmethod
    def _networks(cls, value: str) -> str:
        for item in value.split(","):
            if item.strip():
                ipaddress.ip_network(item.strip(), strict=False)  # ValueError → "not an address or network"
        return value

    @field_validator("anthropic_base_url", "ctgov_api_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("an http:// or https:// address")
        return value.rstrip("/")

    @property
    def proxies(self) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
        """TRUSTED_PROXY as networks."""
        return tuple(
            ipaddress.ip_network(item.strip(), strict=False)
            for item in self.trusted_proxy.split(",")
            if item.strip()
        )

    @property
    def network_limit(self) -> int:
        """ASSISTANT_NETWORK_LIMIT, or three times the per-browser limit when unset."""
        return self.assistant_network_limit or 3 * self.assistant_message_limit


class SettingsError(BadInput):
    """One or more settings have values that are not allowed; the message names each and what it allows."""


NAMES: tuple[str, ...] = tuple(str(f.alias) for f in Settings.model_fields.values())
_FIELD_BY_NAME = {str(f.alias): (key, f) for key, f in Settings.model_fields.items()}


def default(name: str) -> Any:
    """The declared default of the setting `name` (its environment variable)."""
    return _FIELD_BY_NAME[name][1].default


def allowed(name: str) -> str:
    """What the setting `name` accepts, in words, for error messages and the README."""
    _, field = _FIELD_BY_NAME[name]
    low = next((m.ge for m in field.metadata if hasattr(m, "ge")), None)
    high = next((m.le for m in field.metadata if hasattr(m, "le")), None)
    kind = field.annotation
    if kind in (int, int | None):
        words = "a whole number"
    elif kind in (float, float | None):
        words = "a number"
    elif kind is bool:
        return "on/off (also 1/0, true/false, yes/no)"
    elif name == "TRIAL_LANDSCAPE_ENGINE":
        return "`memory` or `sql`"
    elif name == "TRUSTED_PROXY":
        return "IP addresses or networks, comma-separated"
    elif name.endswith("_URL") and name not in ("DATABASE_URL", "APP_DATABASE_URL"):
        return "an http:// or https:// address"
    else:
        return "text"
    if low is not None and high is not None:
        return f"{words} from {low:,} to {high:,}"
    return f"{words} of at least {low:,}" if low is not None else words


def read(env: Mapping[str, str]) -> Settings:
    """The settings from an environment mapping; SettingsError naming every bad variable."""
    given = {name: env[name].strip() for name in NAMES if (env.get(name) or "").strip()}
    try:
        return Settings.model_validate(given)
    except ValidationError as err:
        bad = sorted({str(e["loc"][0]) for e in err.errors() if e["loc"]})
        lines = [
            f"{name}={_quoted(name, given.get(name, ''))} is not allowed: it must be {allowed(name)} "
            f"(unset it for the default: {_shown(name)})."
            for name in bad
        ]
        raise SettingsError(" ".join(lines) or str(err)) from None


_cache: tuple[tuple[str | None, ...], Settings] | None = None


def current() -> Settings:
    """The process's settings, read from the environment once and again only when a declared variable "
    "changed."""
    global _cache
    key = tuple(os.environ.get(name) for name in NAMES)
    if _cache is None or _cache[0] != key:
        _cache = (key, read(os.environ))
    return _cache[1]


def check() -> None:
    """Validate every setting now (at start): SettingsError names each bad variable."""
    current()


def child_environment(**extra: str) -> dict[str, str]:
    """This process's environment for a child process we start (Chromium, a cache build), plus `extra`."""
    return {**os.environ, **extra}


def home() -> Path:
    """The user's home folder (for default cache folders)."""
    return Path.home()


def _secret(name: str) -> bool:
    return _FIELD_BY_NAME[name][1].annotation in (SecretStr, SecretStr | None)


def _extra(name: str, key: str) -> Any:
    """The setting's README group ("group") or its default as the README states it ("shown")."""
    extra = _FIELD_BY_NAME[name][1].json_schema_extra
    return extra.get(key) if isinstance(extra, dict) else None


def _quoted(name: str, value: str) -> str:
    """A bad value as the error message shows it: secrets never, other values cut at 40 characters."""
    return "(hidden)" if _secret(name) else repr(value[:40])


def _shown(name: str) -> str:
    shown = _extra(name, "shown")
    if shown:
        return str(shown)
    value = _FIELD_BY_NAME[name][1].default
    return "unset" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def markdown_table(groups: tuple[str, ...]) -> str:
    """The README's table of some groups: variable, what it does and what it accepts, default."""
    rows = ["| variable | what it does | default |", "|---|---|---|"]
    for name in NAMES:
        if _extra(name, "group") in groups:
            description = _FIELD_BY_NAME[name][1].description
            rows.append(f"| `{name}` | {description}; {allowed(name)} | {_shown(name)} |")
    return "\n".join(rows)


_README_BLOCK = re.compile(
    r"(<!-- settings: (?P<groups>[a-z ]+) -->\n)(?P<table>(?:\|[^\n]*\n)*)(<!-- "
    "settings: end -->)"
)


def readme_with_tables(readme: str) -> str:
    """README text with every `<!-- settings: GROUP … -->` block replaced by the table generated from here."""
    return _README_BLOCK.sub(
        lambda m: m.group(1) + markdown_table(tuple(m.group("groups").split())) + "\n" + m.group(4), readme
    )


def shown_values(config: Settings) -> dict[str, str]:
    """Every setting's value as text for `python -m services settings` (secrets never shown)."""
    out = {}
    for name, (key, _) in _FIELD_BY_NAME.items():
        value = getattr(config, key)
        plain = "unset" if value is None else str(value)
        out[name] = ("(set, hidden)" if value else "unset") if _secret(name) else plain
    return out
