"""The layouts whose turns carry no speaker labels: utterances that alternate, (user, assistant) exchanges, and
`Human: … Assistant: …` transcripts split by their speaker markers. Read through a TurnReader, so content,
reasoning and errors follow the same rules as a turn list's."""

from __future__ import annotations

from typing import Any

from adapters.map import rendered
from adapters.map.turn_source import TurnSource
from adapters.row_fields import get_path, type_name


def exchanges(reader: TurnSource, items: Any, path: str) -> list[dict[str, Any]]:
    """A list of (user, assistant) exchanges: 2-item lists or objects with the two `pair_keys`."""
    if items is None:
        return []
    if not isinstance(items, list):
        raise reader.error(path, f"expected a list of exchanges, got {type_name(items)}")
    keys = reader.spec.pair_keys or []
    out = []
    for i, item in enumerate(items):
        if isinstance(item, dict) and len(keys) == 2:
            pair = [get_path(item, keys[0]), get_path(item, keys[1])]
        elif isinstance(item, list) and len(item) == 2:
            pair = item
        else:
            raise reader.error(f"{path}[{i}]", "expected one (user, assistant) exchange")
        out.append(reader.turn("user", reader.text(pair[0], f"{path}[{i}][0]"), None, None, None, f"{path}[{i}]"))
        out.append(reader.turn("assistant", reader.text(pair[1], f"{path}[{i}][1]"), None, None, None, f"{path}[{i}]"))
    return out


def utterances(reader: TurnSource, items: Any, path: str) -> list[dict[str, Any]]:
    if reader.spec.pair_keys is not None:
        return exchanges(reader, items, path)
    if not isinstance(items, list):
        raise reader.error(path, f"expected a list of utterances, got {type_name(items)}")
    roles = ["system"] if reader.spec.first_role == "system" else []
    out = []
    for i, item in enumerate(items):
        order = ("assistant", "user") if reader.spec.first_role == "assistant" else ("user", "assistant")
        role = roles[i] if i < len(roles) else order[(i - len(roles)) % 2]
        if isinstance(item, dict) and reader.spec.content_key:
            item = reader.get(item, reader.spec.content_key)
        text, parts = reader.content(item, f"{path}[{i}]")
        out.append(reader.turn(role, text, None, None, parts, f"{path}[{i}]"))
    return out


def transcript(reader: TurnSource, text: Any, field: str) -> list[dict[str, Any]]:
    if not isinstance(text, str):
        raise reader.error(field, f"transcript must be a string, got {type_name(text)}")
    t = reader.spec.transcript
    assert t is not None  # the spec validator requires `transcript` for this layout
    try:
        segments = rendered.turns_of(
            text,
            dict(t.markers),
            anchored=t.anchored,
            ends=t.ends or rendered.END_TOKENS,
            preamble=t.preamble,
            merge=t.merge,
        )
    except ValueError as exc:
        raise reader.error(field, str(exc)) from None
    if not segments:
        raise reader.error(field, "no speaker markers found in the transcript")
    return [
        reader.turn(role, reader.text(body, f"{field}#{i}"), None, None, None, f"{field}#{i}")
        for i, (role, body) in enumerate(segments)
    ]
