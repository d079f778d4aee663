"""Tool declarations and structured tool calls through a chat template, also one that ignores them.

Templates with tool support (the toy's Kimi-style one, Qwen, Llama 3.1 ...) render `tools=` and each
assistant turn's `tool_calls` themselves: nothing to do. Some chat templates ignore both (SmolLM2's plain
ChatML). For those a call would vanish from the rendering, so a trained answer would lose its call and
a replayed call would be invisible to the model. There the calls are written into the assistant content
in the Hermes form `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, which is what such a
model generates when it calls a tool and what the dev server parses back into `tool_calls`
(pipeline/servers/devserver/toolcalls.py): serving and build render the same text. Whether a template
renders calls is probed once per tokenizer by rendering a call with a marker name.
"""

from __future__ import annotations

import json
from typing import Any

PROBE_NAME = "draftset_probe_fn"
_RENDERS_CALLS: dict[int, bool] = {}


def renders_tool_calls(tokenizer: Any) -> bool:
    """Does this tokenizer's chat template render an assistant turn's `tool_calls`? (cached)"""
    key = id(tokenizer)
    if key not in _RENDERS_CALLS:
        probe = [
            {"role": "user", "content": "x"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "call_0", "type": "function", "function": {"name": PROBE_NAME, "arguments": "{}"}}
                ],
            },
        ]
        try:
            text = tokenizer.apply_chat_template(probe, tokenize=False)
        except Exception:  # a template that refuses tool_calls outright does not render them  # noqa: BLE001
            text = ""
        _RENDERS_CALLS[key] = PROBE_NAME in text
    return _RENDERS_CALLS[key]


def hermes_text(calls: list[dict[str, Any]]) -> str:
    """Calls as `<tool_call>{json}</tool_call>` blocks (arguments as an object, as models write them)."""
    blocks = []
    for call in calls:
        if not isinstance(call, dict) or not isinstance(call.get("function", {}), dict):
            raise ValueError(f"a tool call must be an object with a function, got {str(call)[:60]!r}")
        fn = call.get("function") or call
        args = fn.get("arguments")
        try:
            args = json.loads(args) if isinstance(args, str) else args
        except ValueError:
            pass  # kept as the string it is: the contract, not the renderer, judges arguments
        blocks.append(
            "<tool_call>\n"
            + json.dumps({"name": fn.get("name"), "arguments": args}, ensure_ascii=False)
            + "\n</tool_call>"
        )
    return "\n".join(blocks)


def for_template(tokenizer: Any, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`messages` ready for this template: unchanged when it renders tool calls, else with each assistant
    turn's calls written into its content (and the structured field removed)."""
    if not any(m.get("tool_calls") for m in messages) or renders_tool_calls(tokenizer):
        return messages
    out = []
    for m in messages:
        calls = m.get("tool_calls") if m.get("role") == "assistant" else None
        if calls:
            text = m.get("content") or ""
            m = {k: v for k, v in m.items() if k != "tool_calls"}
            m["content"] = (text + "\n" if text else "") + hermes_text(calls)
        out.append(m)
    return out
