"""Tool declarations and tool calls in the many shapes public datasets use → the OpenAI shapes of record v2.

Declarations: OpenAI `{type, function: {name, description, parameters}}`, flat `{name, description,
parameters}` (hermes, glaive), and xlam's parameter maps (`{"x": {"type": "float", "description"}}`,
not JSON schema) whose Python type names are translated to JSON-schema types.

Calls written inside assistant text are parsed here, never evaluated: hermes `<tool_call>{json}</tool_call>`,
glaive `<functioncall> {json}`, SWE-smith / Qwen `<function=name><parameter=k>v</parameter></function>`, Anthropic-style
`<invoke name="x"><parameter name="k">v</parameter></invoke>`,
a whole turn that is one JSON call object, and Python call code `[name(arg=value)]` (adapters/map/pycalls.py). Each parser returns (calls, text without the calls).
"""

from __future__ import annotations

import json
import re
from typing import Any

from adapters.map import pycalls
from adapters.records import normalize_call
from adapters.row_fields import RowError

PY_TYPES = {
    "str": "string",
    "string": "string",
    "int": "integer",
    "integer": "integer",
    "float": "number",
    "number": "number",
    "bool": "boolean",
    "boolean": "boolean",
    "list": "array",
    "array": "array",
    "tuple": "array",
    "dict": "object",
    "object": "object",
    "any": "string",
    "none": "null",
}

HERMES = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)
FUNCTIONCALL = re.compile(r"<functioncall>\s*")
FUNCTION_TAG = re.compile(r"<function=([\w.\-]+)>(.*?)</function>", re.S)
PARAMETER_TAG = re.compile(r"<parameter=([\w.\-]+)>\n?(.*?)\n?</parameter>", re.S)
GLAIVE_QUOTED = re.compile(r"""\s*\{\s*"name"\s*:\s*"([^"]+)"\s*,\s*"arguments"\s*:\s*'(.*?)'\s*\}""", re.S)
# Anthropic-style XML calls: `<function_calls><invoke name="x"><parameter name="k">v</parameter></invoke>...`
INVOKE = re.compile(r"""<invoke\s+name=["']([\w.\-]+)["']\s*>(.*?)</invoke>""", re.S)
INVOKE_PARAMETER = re.compile(r"""<parameter\s+name=["']([\w.\-]+)["']\s*>\n?(.*?)\n?</parameter>""", re.S)
INVOKE_WRAPPER = re.compile(r"</?(?:antml:)?function_calls>")
# Elements that wrap a tool's output when a dataset writes results as a user (or human) turn.
RESULT_TAGS = ("tool_response", "tool_result", "function_results", "function_result", "function_response")
REACT = re.compile(r"^Action:[ \t]*([\w.\-]+)[ \t]*\nAction Input:[ \t]*(.*)\Z", re.S | re.M)
# A command written out in an agent's own text, not as a structured call: a fenced block, or a tag pair around it
# (<command>, <execute_bash>, <bash>). The evidence that the next speaker is the environment answering it.
COMMAND_IN_TEXT = re.compile(r"```|<([A-Za-z][\w\-]*)>.+?</\1>", re.S)
MARKERS = {
    "react": "Action Input:",
    "hermes": "<tool_call>",
    "functioncall": "<functioncall>",
    "function_tag": "<function=",
    "invoke": "<invoke name=",
}


class ToolFormatError(ValueError):
    """Tool markup that is present but cannot be read (bad JSON, no name)."""


def _json_type(spec: Any) -> str:
    """A Python-ish type name (`float`, `List[int]`, `str, optional`) → a JSON-schema type."""
    base = re.split(r"[\[,|( ]", str(spec).strip().lower(), maxsplit=1)[0]
    return PY_TYPES.get(base, "string")


def _schema(params: Any) -> dict[str, Any]:
    if not isinstance(params, dict) or not params:
        return {"type": "object", "properties": {}}
    if params.get("type") == "object" or "properties" in params:
        return params  # already JSON schema
    props, required = {}, []
    for key, value in params.items():  # xlam-style map of parameter → {type, description, default}
        info = value if isinstance(value, dict) else {"type": value}
        prop = {"type": _json_type(info.get("type", "string"))}
        if isinstance(info.get("description"), str):
            prop["description"] = info["description"]
        props[key] = prop
        if "default" not in info and "optional" not in str(info.get("type", "")).lower():
            required.append(key)
    return {"type": "object", "properties": props, "required": required}


def normalize_tools(value: Any) -> list[dict[str, Any]] | None:
    """Tool declarations in any common shape → OpenAI `tools=` entries. Raises ValueError naming the problem."""
    if value is None or value == [] or value == "":
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"tool declarations are not valid JSON ({exc.msg})") from None
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        raise ValueError(f"tool declarations must be a list, got {type(value).__name__}")
    tools = []
    for item in value:
        if isinstance(item, str):
            item = json.loads(item)  # some sets store one JSON string per tool
        if not isinstance(item, dict):
            raise ValueError("a tool declaration is not an object")
        inner = item.get("function")
        fn: dict[str, Any] = inner if isinstance(inner, dict) else item
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError("a tool declaration has no name")
        decl: dict[str, Any] = {"name": name, "parameters": _schema(fn.get("parameters"))}
        if isinstance(fn.get("description"), str):
            decl["description"] = fn["description"]
        tools.append({"type": "function", "function": decl})
    return tools


def _loads(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:  # a single object followed by prose: decode the leading object only
        value, _ = json.JSONDecoder().raw_decode(text.strip())
        return value
    except json.JSONDecodeError as exc:
        raise ToolFormatError(f"{what} is not valid JSON ({exc.msg})") from None


def _as_calls(value: Any, prefix: str) -> list[dict[str, Any]]:
    items = value if isinstance(value, list) else [value]
    try:
        return [normalize_call(c, f"{prefix}_{j}") for j, c in enumerate(items)]
    except ValueError as exc:
        raise ToolFormatError(str(exc)) from None


def parse_text_calls(fmt: str, text: str, prefix: str) -> tuple[list[dict[str, Any]], str]:
    """(calls, remaining text) for one assistant turn; no markup → ([], text)."""
    if fmt == "hermes":
        bodies = HERMES.findall(text)
        calls = [c for i, b in enumerate(bodies) for c in _as_calls(_loads(b, "<tool_call> body"), f"{prefix}_{i}")]
        return calls, HERMES.sub("", text).strip() if calls else text
    if fmt == "functioncall":
        m = FUNCTIONCALL.search(text)
        if not m:
            return [], text
        body = text[m.end() :]
        quoted = GLAIVE_QUOTED.match(body)
        if quoted:  # glaive writes arguments as single-quoted JSON text (not JSON): keep that text as the string
            value: Any = {"name": quoted.group(1), "arguments": quoted.group(2)}
            end = quoted.end()
        else:
            try:
                value, end = json.JSONDecoder().raw_decode(body)
            except json.JSONDecodeError as exc:
                raise ToolFormatError(f"<functioncall> body is not valid JSON ({exc.msg})") from None
        rest = body[end:].strip()
        for token in ("<|endoftext|>", "</s>"):
            rest = rest.removeprefix(token).strip()
        # text after the call is kept, never dropped with the markup
        return _as_calls(value, prefix), "\n\n".join(p for p in (text[: m.start()].strip(), rest) if p)
    if fmt == "function_tag":
        found = FUNCTION_TAG.findall(text)
        calls = [
            normalize_call({"name": name, "arguments": dict(PARAMETER_TAG.findall(body))}, f"{prefix}_{i}")
            for i, (name, body) in enumerate(found)
        ]
        return calls, FUNCTION_TAG.sub("", text).strip() if calls else text
    if fmt == "invoke":
        found = INVOKE.findall(text)
        calls = [
            normalize_call({"name": name, "arguments": _typed(INVOKE_PARAMETER.findall(body))}, f"{prefix}_{i}")
            for i, (name, body) in enumerate(found)
        ]
        rest = INVOKE_WRAPPER.sub("", INVOKE.sub("", text)).strip()
        return (calls, rest) if calls else ([], text)
    if fmt == "react":  # ToolBench / LangChain ReAct: `Action: name` then `Action Input: {json}` at the end
        m = REACT.search(text)
        if not m:
            return [], text
        args = m.group(2).strip()
        value = _loads(args, "Action Input") if args.startswith("{") else {"input": args}
        return [normalize_call({"name": m.group(1), "arguments": value}, f"{prefix}_0")], text[: m.start()].strip()
    if fmt == "pycall":  # `[name(arg=value, ...)]`: Python call code, parsed by adapters/map/pycalls.py
        if not pycalls.starts_like_calls(text):
            return [], text
        try:
            return pycalls.as_tool_calls(text, prefix), ""
        except (pycalls.PyCallError, ValueError) as exc:
            raise ToolFormatError(f"call code: {exc}") from None
    if fmt == "json":
        stripped = text.strip()
        if not stripped.startswith(("{", "[")):
            return [], text
        return _as_calls(_loads(stripped, "tool call"), prefix), ""
    raise ToolFormatError(f"unknown text tool-call format {fmt!r}")


def _typed(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """Parameter values as written: JSON where the text is JSON (`5`, `true`, `[1, 2]`), else the string."""
    out: dict[str, Any] = {}
    for key, raw in pairs:
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


def result_tag(text: str, tags: list[str] | tuple[str, ...] = RESULT_TAGS) -> str | None:
    """The result element (`tool_response`) that wraps the whole of `text`, or None."""
    stripped = text.strip()
    for tag in tags:
        if stripped.startswith(f"<{tag}>") and stripped.endswith(f"</{tag}>"):
            return tag
    return None


def detect_text_format(texts: list[str]) -> tuple[str | None, str]:
    """The text tool-call format used by these assistant texts, with the evidence, or (None, why not)."""
    counts = {fmt: sum(marker in t for t in texts) for fmt, marker in MARKERS.items()}
    fmt = max(counts, key=lambda f: counts[f])
    if counts[fmt]:
        return fmt, f"{counts[fmt]} of {len(texts)} assistant turns write calls as {MARKERS[fmt]}…"
    calls = 0
    for t in texts:
        s = t.strip()
        if s.startswith("{") and s.endswith("}"):
            try:
                v = json.loads(s)
            except json.JSONDecodeError:
                continue
            calls += isinstance(v, dict) and isinstance(v.get("name"), str) and ("arguments" in v or "parameters" in v)
    if calls and calls >= 0.2 * len(texts):
        return "json", f"{calls} of {len(texts)} assistant turns are a bare JSON call {{name, arguments}}"
    code = sum(pycalls.looks_like_calls(t) for t in texts if pycalls.starts_like_calls(t))
    if code and code >= 0.2 * len(texts):
        return "pycall", f"{code} of {len(texts)} assistant turns are Python call code `[name(arg=value)]`"
    return None, "no tool-call markup in assistant text"


def link_tool_turns(messages: list[dict[str, Any]]) -> None:
    """Give each tool turn that lacks one the id (and name) of the oldest unanswered earlier call.

    A tool result before any call answers nothing (LLaMA-Factory drops such rows for breaking its role order):
    the row is rejected by name, so it is quarantined and counted instead of training a chat no model could
    have had."""
    pending: list[dict[str, Any]] = []
    called = False
    for i, m in enumerate(messages):
        if m["role"] == "assistant" and m.get("tool_calls"):
            pending, called = list(m["tool_calls"]), True
        elif m["role"] == "tool":
            if m.get("tool_call_id"):
                pending = [c for c in pending if c["id"] != m["tool_call_id"]]
                continue
            if not called:
                raise RowError(f"messages[{i}]", "tool result with no earlier tool call")
            if pending:
                call = pending.pop(0)
                m["tool_call_id"] = call["id"]
                if not m.get("name"):
                    m["name"] = call["function"]["name"]
