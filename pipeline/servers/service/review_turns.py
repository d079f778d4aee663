"""Raw and canonical turns side by side, row by row, for the review page.

A turn-list row (messages / trajectory layouts) is walked raw turn by raw turn: each raw turn is paired
with the canonical message it became, or shown greyed with why it is not there (its label maps to `drop`,
the label is unmapped, it comes after the regenerate cut, or the adapter merged/left it out). Canonical
messages that no raw turn gave (a system prompt taken from another field) are shown with an empty raw
side. Other layouts (columns, utterances, transcript) have no raw turn list: their raw row is shown whole.

The pairing is by role, in order: the adapter keeps the order of the turns it keeps, so the first unused
canonical message with the raw turn's mapped role is the one it became. It is a reading aid; the
contract, not this, decides whether the adapter is right.
"""

from __future__ import annotations

import json
from typing import Any

from adapters.row_fields import get_path
from adapters.spec import AdapterSpec
from catalog import limits

MAX_TEXT = 4000  # characters of one turn shown; the rest is cut with a marker


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f" … (+{len(text) - MAX_TEXT:,} chars)"


def raw_turns(spec: AdapterSpec, row: Any) -> list[Any] | None:
    """The row's raw turn list, decoded like the adapter decodes it; None when the layout has none."""
    if spec.layout not in ("messages", "trajectory") or not isinstance(row, dict):
        return None
    turns = get_path(row, spec.messages_path)
    if isinstance(turns, str) and spec.messages_path in spec.json_fields:
        try:
            turns = limits.loads_limited(turns)
        except limits.LimitExceeded:
            return None
    return turns if isinstance(turns, list) else None


def align(spec: AdapterSpec, row: Any, canonical: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """[{raw_path, raw_label, raw_text, role, text, status, why}] for one row; None without a raw turn list."""
    turns = raw_turns(spec, row)
    if turns is None:
        return None
    messages = canonical[0]["messages"] if canonical else []
    used = [False] * len(messages)
    out: list[dict[str, Any]] = []
    cut = spec.mode == "regenerate" and bool(messages)
    for i, turn in enumerate(turns):
        label = get_path(turn, spec.role_key) if isinstance(turn, dict) else None
        content = get_path(turn, spec.content_key) if isinstance(turn, dict) else turn
        item = {
            "raw_path": f"{spec.messages_path}[{i}]",
            "raw_label": label,
            "raw_text": _text(content if content is not None else turn),
            "role": None,
            "text": None,
            "status": "kept",
            "why": "",
            "message": None,
        }
        target = spec.role_map.get(label) if isinstance(label, str) else None
        j = next((k for k, m in enumerate(messages) if not used[k] and m["role"] == target), None)
        if target == "drop":
            item.update(status="dropped", why=f"label {label!r} maps to drop in the role map")
        elif target is None:
            item.update(status="dropped", why=f"label {label!r} is not in the role map")
        elif not messages:
            item.update(status="dropped", why="the adapter refused this row (the reason is above)")
        elif j is not None:
            used[j] = True
            item.update(role=messages[j]["role"], text=_text(messages[j].get("content") or ""), message=messages[j])
        elif cut and all(used[: len(messages)]):
            item.update(status="cut", why="after the regenerate cut: the target writes the answer from here")
        else:
            item.update(status="dropped", why="merged into a neighbour or left out by the adapter")
        out.append(item)
    # Canonical messages no raw turn gave (e.g. the system prompt from another field) lead the list.
    extra = [
        {
            "raw_path": None,
            "raw_label": None,
            "raw_text": "",
            "role": m["role"],
            "text": _text(m.get("content") or ""),
            "status": "added",
            "why": "not from the turn list (another field of the row, or the spec)",
            "message": m,
        }
        for k, m in enumerate(messages)
        if not used[k]
    ]
    return extra + out
