"""Tool declarations written inside a system prompt: glaive's "access to the following functions -\n{json}",
ToolACE's and Llama-3.x's JSON tool lists in the system text. Found by decoding the JSON values the text holds
(never by evaluating it) and keeping those that read as declarations (a name with parameters or a description).

A dataset whose calls name tools that are only declared in prose is left to the contract's undeclared-tool
warning; this module only lifts declarations that are already structured data.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from adapters.map import structure as st
from adapters.map.toolcalls import normalize_tools

if TYPE_CHECKING:
    from adapters.detected import Detected

MAX_TEXT = 200_000
MAX_VALUES = 64


def _is_decl(value: Any) -> bool:
    fn = value.get("function") if isinstance(value, dict) and isinstance(value.get("function"), dict) else value
    return (
        isinstance(fn, dict)
        and isinstance(fn.get("name"), str)
        and ("parameters" in fn or "description" in fn)
        and "arguments" not in fn
    )


def tools_in_text(text: str | None) -> list[dict[str, Any]] | None:
    """The OpenAI `tools=` entries declared as JSON inside a text, or None when it declares none."""
    if not isinstance(text, str) or len(text) > MAX_TEXT:
        return None
    decoder, found, pos, seen = json.JSONDecoder(), [], 0, 0
    while seen < MAX_VALUES:
        starts = [i for i in (text.find("{", pos), text.find("[", pos)) if i != -1]
        if not starts:
            break
        start = min(starts)
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            pos = start + 1
            continue
        seen += 1
        items = value if isinstance(value, list) else [value]
        found += [v for v in items if _is_decl(v)]
        pos = end
    if not found:
        return None
    try:
        return normalize_tools(found)
    except ValueError:
        return None


def _system_texts(d: Detected, rows: list[dict[str, Any]]) -> list[str | None]:
    """The system text of each row under the detected layout: the system column, or the first system turn."""
    if d.fields.get("system_field"):
        return [r.get(d.fields["system_field"]) for r in rows]
    path, role_key, content_key = (d.fields.get(k) for k in ("messages_path", "role_key", "content_key"))
    system_labels = {k for k, v in d.fields.get("role_map", {}).items() if v == "system"}
    if not (path and role_key and content_key and system_labels):
        return []
    out: list[str | None] = []
    for r in rows:
        turns = st.decoded(st.get(r, path))[0]
        first = turns[0] if isinstance(turns, list) and turns and isinstance(turns[0], dict) else {}
        out.append(st.get(first, content_key) if st.get(first, role_key) in system_labels else None)
    return out


def detect_system_tools(d: Detected, rows: list[dict[str, Any]]) -> None:
    """Declarations in the system prompt when no column holds them: carried into records as `tools`."""
    if "tools_field" in d.fields or d.layout is None:
        return
    texts = [t for t in _system_texts(d, rows) if isinstance(t, str) and t.strip()]
    declared = [t for t in texts if tools_in_text(t)]
    if texts and len(declared) >= 0.5 * len(texts):
        d.decide(
            "tools_in_system",
            True,
            f"{len(declared)}/{len(texts)} system prompts declare tools as JSON: carried into records as `tools` "
            "(the system text is kept as written)",
        )
