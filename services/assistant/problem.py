"""A pydantic ValidationError in words the model (or a person reading a log) can act on: one line per problem,
naming the field by its JSON path."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

_BRANCHES = frozenset({"none", "str", "int", "float", "bool", "list"})  # pydantic's names of union branches


def problems(error: ValidationError, model: type[BaseModel] | None = None) -> list[str]:
    """Every way a value broke its model, one line each naming the field ('$.limit: …, got 99'). For a
    field that may be one of several types, the other types' complaints are left out when a deeper problem
    says more. With the model, an unknown top-level field is answered with the fields it allows."""
    found: list[tuple[list[str], bool, ErrorDetails]] = []
    for err in error.errors(include_url=False):
        if err["type"] == "none_required":  # the other branch of an optional field says what was wrong
            continue
        loc = [str(p) for p in err["loc"] if not _branch(p)]
        found.append((loc, len(loc) < len(err["loc"]), err))
    lines: list[str] = []
    for loc, branch, err in found:
        if branch and any(len(other) > len(loc) and other[:len(loc)] == loc for other, _, _ in found):
            continue
        if err["type"] == "extra_forbidden":
            top = model is not None and len(loc) == 1
            allowed = f" (allowed: {', '.join(model.model_fields)})" if model is not None and top else ""
            line = f"{_path(loc[:-1])}: unknown field '{loc[-1]}'{allowed}"
        elif err["type"] == "missing":
            line = f"{_path(loc[:-1])}: missing required field '{loc[-1]}'"
        else:
            message = str(err["msg"]).removeprefix("Value error, ")
            line = f"{_path(loc)}: {message[:1].lower()}{message[1:]}, got {_shown(err.get('input'))}"
        if line not in lines:
            lines.append(line)
    return lines


def _branch(part: Any) -> bool:
    """Whether a part of an error's location names a union's branch or a validator, not a field."""
    return isinstance(part, str) and ("[" in part or "-" in part or part in _BRANCHES)


def _path(loc: Sequence[str]) -> str:
    return "$" + "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in loc)


def _shown(value: Any) -> str:
    try:
        shown = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        shown = repr(value)
    return shown if len(shown) <= 60 else shown[:59] + "…"
