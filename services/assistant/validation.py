"""A validator for the part of JSON Schema the assistant's tool schemas use (no dependency, exact messages)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

SUPPORTED_KEYWORDS = frozenset(
    {
        "type", "properties", "required", "enum", "items", "minimum", "maximum", "maxLength",
        "minItems", "maxItems", "additionalProperties", "description",
    }
)  # fmt: skip
_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def check_schema(schema: Mapping[str, Any], path: str = "$") -> None:
    """Raise ValueError if a schema uses a keyword the validator does not implement."""
    unknown = set(schema) - SUPPORTED_KEYWORDS
    if unknown:
        raise ValueError(f"schema at {path} uses unsupported keywords: {', '.join(sorted(unknown))}")
    for name, sub in schema.get("properties", {}).items():
        check_schema(sub, f"{path}.{name}")
    if "items" in schema:
        check_schema(schema["items"], f"{path}[]")


def validate(schema: Mapping[str, Any], value: Any, path: str = "$") -> list[str]:
    """Every way value breaks schema, as '<path>: <problem>' lines (empty when valid)."""
    problems: list[str] = []
    kind = schema.get("type")
    if kind is not None:
        kinds = [kind] if isinstance(kind, str) else list(kind)
        if not any(_TYPES[k](value) for k in kinds):
            return [f"{path}: must be {' or '.join(kinds)}, got {_json_type(value)}"]
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(json.dumps(v) for v in schema["enum"])
        problems.append(f"{path}: must be one of {allowed}, got {json.dumps(value)[:60]}")
    if isinstance(value, float) and not math.isfinite(value):  # JSON has no NaN or Infinity; Python reads them
        return [f"{path}: must be a finite number, got {value}"]
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"{path}: must be >= {schema['minimum']}, got {value}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"{path}: must be <= {schema['maximum']}, got {value}")
    if isinstance(value, str) and "maxLength" in schema and len(value) > schema["maxLength"]:
        problems.append(f"{path}: must be at most {schema['maxLength']} characters, got {len(value)}")
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            problems.append(f"{path}: must have at least {schema['minItems']} items, got {len(value)}")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            problems.append(f"{path}: must have at most {schema['maxItems']} items, got {len(value)}")
        if "items" in schema:
            for i, item in enumerate(value):
                problems.extend(validate(schema["items"], item, f"{path}[{i}]"))
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                problems.append(f"{path}: missing required property '{name}'")
        if schema.get("additionalProperties") is False:
            for name in value:
                if name not in properties:
                    allowed = ", ".join(properties) or "none"
                    problems.append(f"{path}: unknown property '{name}' (allowed: {allowed})")
        for name, sub in properties.items():
            if name in value:
                problems.extend(validate(sub, value[name], f"{path}.{name}"))
    return problems


def _json_type(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _TYPES[name](value):
            return name
    return type(value).__name__
