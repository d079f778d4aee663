"""Tool calls the model generated, as OpenAI `tool_calls`, read from the chat template's own markers.

Two layouts, one per template family the project serves:
  Kimi (the toy target): <|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX
                         <|tool_call_argument_begin|>{json}<|tool_call_end|>...<|tool_calls_section_end|>
  Hermes/ChatML (SmolLM2, Qwen): <tool_call>{"name": NAME, "arguments": {...}}</tool_call>
The text is the completion decoded WITH special tokens (Kimi's markers are special tokens). A block that
does not parse stays in the content (the client sees what the model wrote) and is never half-applied.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

KIMI_SECTION = re.compile(r"<\|tool_calls_section_begin\|>(.*?)(?:<\|tool_calls_section_end\|>|$)", re.S)
KIMI_CALL = re.compile(
    r"<\|tool_call_begin\|>\s*(?:functions\.)?([\w.\-]+)(?::\d+)?\s*"
    r"<\|tool_call_argument_begin\|>(.*?)<\|tool_call_end\|>",
    re.S,
)
HERMES_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.S)


def call(name: str, arguments: Any) -> dict[str, Any]:
    """One OpenAI tool call; arguments always a JSON string."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return {"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function", "function": {"name": name, "arguments": text}}


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def parse_tool_calls(text: str, tool_names: set[str]) -> tuple[str, list[dict[str, Any]]]:
    """(content before the first call, calls). Only declared tools with JSON-object arguments count."""
    calls: list[dict[str, Any]] = []
    section = KIMI_SECTION.search(text)
    if section:
        for name, args in KIMI_CALL.findall(section.group(1)):
            if name in tool_names and _json_object(args.strip()) is not None:
                calls.append(call(name, args.strip()))
        if calls:
            return text[: section.start()], calls
    first = None
    for match in HERMES_CALL.finditer(text):
        body = _json_object(match.group(1))
        if body and body.get("name") in tool_names and isinstance(body.get("arguments", {}), dict):
            calls.append(call(body["name"], body.get("arguments", {})))
            first = match.start() if first is None else first
    return (text, []) if not calls else (text[:first], calls)
