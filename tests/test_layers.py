"""The package layout is the layer picture: imports only go down (README, Architecture)."""

from __future__ import annotations

import ast
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent


def _imports(folder: str) -> dict[str, set[str]]:
    """Every module that each .py file under folder imports (absolute names, function-level imports included)."""
    found: dict[str, set[str]] = {}
    for path in sorted((PROJECT / folder).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
        found[path.relative_to(PROJECT).as_posix()] = names
    return found


def _offenders(folder: str, banned: tuple[str, ...], allowed_files: tuple[str, ...] = ()) -> dict[str, list[str]]:
    return {
        file: sorted(n for n in names if n.split(".")[0] in banned or n.startswith(banned))
        for file, names in _imports(folder).items()
        if file not in allowed_files and any(n.split(".")[0] in banned or n.startswith(banned) for n in names)
    }


def test_layers_services_never_import_the_devtools() -> None:
    # `python -m services bench|synth` hands over to `python -m devtools` by module name (runpy), no import
    assert _offenders("services", ("devtools",), allowed_files=()) == {}


def test_layers_data_imports_nothing_above_it() -> None:
    above = ("services.dashboard", "services.ui", "services.assistant", "services.eligibility", "services.report",
             "services.commands", "services.cli", "services.trials")
    assert _offenders("services/data", above) == {}


def test_layers_dashboard_imports_no_view_glue_assistant_or_cli() -> None:
    above = ("services.ui", "services.assistant", "services.report", "services.commands", "services.cli", "streamlit")
    assert _offenders("services/dashboard", above) == {}


def test_layers_eligibility_imports_no_dashboard_data_assistant_or_ui() -> None:
    above = ("services.dashboard", "services.data", "services.ui", "services.assistant", "services.report",
             "services.trials", "streamlit")
    assert _offenders("services/eligibility", above) == {}
