"""A raw row's fields read one at a time: the error that names a field, JSON-string columns, tool calls.

Its own module so that adapters/map/apply.py (records) and adapters/map/turns.py (turn lists), which both read
fields, share these without importing each other.
"""

from __future__ import annotations

from typing import Any

from adapters.records import normalize_call
from catalog import limits


class RowError(ValueError):
    """One raw row cannot become a record. `field` names where, `reason` says what is wrong."""

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def decode_json_field(value: Any, field: str) -> Any:
    """A JSON-string column becomes its value; non-strings pass through; bad JSON is a RowError."""
    if not isinstance(value, str):
        return value
    try:  # under the depth/int limits: a deeply nested JSON string is a row error, not a RecursionError
        return limits.loads_limited(value, "value")
    except limits.LimitExceeded as exc:
        detail = str(exc).removeprefix("value: ")
        raise RowError(field, f"not valid JSON ({detail})" if exc.reason == "invalid_json" else detail) from None


def get_path(row: Any, path: str | None) -> Any:
    """Read a dotted path (`a.b.c`); a missing step gives None."""
    if path is None:
        return None
    if "." not in path:  # the common case, one dict read
        return row.get(path) if isinstance(row, dict) else None
    value: Any = row
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def field_id(field: str) -> str:
    """A short stable token from a field path, for ids of calls that came without one."""
    return "".join(ch if ch.isalnum() else "_" for ch in field).strip("_")[-24:]


def as_tool_calls(value: Any, field: str) -> list[dict[str, Any]] | None:
    """Structured tool calls in any common shape → the v2 shape; a RowError names what is wrong."""
    value = decode_json_field(value, field)
    if value is None or value == []:
        return None
    if isinstance(value, dict):
        value = [value]  # one call given bare (LLaMA-Factory `function_call` turns, some xlam rows)
    if not isinstance(value, list) or not all(isinstance(c, dict) for c in value):
        raise RowError(field, f"tool calls must be a list of objects, got {type_name(value)}")
    try:
        return [normalize_call(c, f"call_{field_id(field)}_{j}") for j, c in enumerate(value)]
    except ValueError as exc:
        raise RowError(field, str(exc)) from None
