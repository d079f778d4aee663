"""The column layouts: one exchange over single-turn columns (prompt columns joined, the answer column, an answer
whose opening sits in another column) and turns spread over numbered columns. Read through a TurnReader, so
content, reasoning and errors follow the same rules as a turn list's."""

from __future__ import annotations

from typing import Any

from adapters.map import spoken_turns
from adapters.map.turn_source import TurnSource
from adapters.row_fields import as_tool_calls, get_path, type_name


def turn_columns(reader: TurnSource, row: dict[str, Any]) -> list[dict[str, Any]]:
    """Turns spread over numbered columns: in order, until the first empty one; text after a gap is an error
    (a conversation with a hole in it), never silently skipped."""
    out: list[dict[str, Any]] = []
    ended: str | None = None
    for tc in reader.spec.turn_columns or []:
        value = get_path(row, tc.field)
        if value is None or (isinstance(value, str) and not value.strip()):
            ended = ended or tc.field
            continue
        if ended:
            raise reader.error(tc.field, f"turn text after the empty turn column {ended!r}")
        role: str | None = tc.role
        if tc.role_field:
            label = get_path(row, tc.role_field)
            role = reader.role_map.get(label) if isinstance(label, str) else None
            if role is None:
                raise reader.error(tc.role_field, f"unmapped role label {label!r}")
        if role == "drop":
            continue
        text, parts = reader.content(value, tc.field)
        out.append(reader.turn(str(role), text, None, None, parts, tc.field))
    return out


def columns(reader: TurnSource, row: dict[str, Any]) -> list[dict[str, Any]]:

    cols = reader.spec.columns
    assert cols is not None  # the spec validator requires `columns` for this layout
    history = spoken_turns.exchanges(reader, get_path(row, cols.history), cols.history) if cols.history else []
    first, *extra = cols.prompt
    if get_path(row, first) is None and first not in row:
        raise reader.error(first, "prompt column is missing")
    prompt = reader.text(get_path(row, first), first)
    for name in extra:
        value = get_path(row, name)
        if value is not None and not isinstance(value, str):
            raise reader.error(name, f"expected a string, got {type_name(value)}")
        if value and value.strip():
            # a blank line between fields; one space where a column continues the sentence before it
            prompt += (" " if name in cols.continues else "\n\n") + value
    turns = [*history, reader.turn("user", prompt, None, None, None, first)]
    if cols.response is None or not reader.native:
        return turns  # regenerate mode: the target writes the answer, the original is not needed
    value = get_path(row, cols.response)
    if cols.response_is_tool_calls:
        calls = as_tool_calls(value, cols.response)
        if not calls:
            raise reader.error(cols.response, "no tool calls in the response column")
        turns.append(reader.turn("assistant", "", calls, None, None, cols.response))
    else:
        text = reader.text(value, cols.response, allow_empty=bool(cols.response_head))
        if cols.response_head:
            text = answer_head(reader, row, cols.response_head, cols.response, text)
        turns.append(reader.turn("assistant", text, None, None, None, cols.response))
    return turns


def answer_head(reader: TurnSource, row: dict[str, Any], name: str, response: str, tail: str) -> str:
    """The answer whose opening sits in column `name` and whose rest (`tail`, from `response`) continues its
    sentence: one space between them, as the text was before it was split."""
    head = get_path(row, name)
    if head is not None and not isinstance(head, str):
        raise reader.error(name, f"expected a string, got {type_name(head)}")
    if not head or not head.strip():
        return reader.text(tail, response)  # no opening on this row: the response column alone
    return reader.text(f"{head.rstrip()} {tail.lstrip()}" if tail.strip() else head, response)
