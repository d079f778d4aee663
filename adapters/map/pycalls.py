"""Tool calls written as Python call code: `[get_weather(city="Oslo", unit="celsius"), calc(expression="2*3")]`
(Llama-3.2/4 "pythonic" tool calling, the Berkeley Function-Calling Leaderboard's python answers, ToolACE) or
one bare `name(arg=value)` per turn.

Parsed with Python's `ast` and `ast.literal_eval` on each argument node: the text is never evaluated or imported,
only literals (strings, numbers, booleans, None, lists, dicts, tuples) are accepted, and anything else
(a variable, an expression, a positional argument that names no parameter) is a `ToolFormatError` naming it.
Hand-written because no library reads call syntax into JSON arguments; `ast` does the parsing.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from adapters.records import normalize_call

MAX_CALL_TEXT = 20_000
CALL_START = re.compile(
    r"^(?:<\|python_tag\|>)?\s*\[\s*[A-Za-z_][\w.]*\("
)  # `[name(`: a call list begins  # a tool-call turn longer than this is prose or code, not a call list


class PyCallError(ValueError):
    """Text that looks like Python call code but is not a list of literal-argument calls."""


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):  # dotted tool names (`math.factorial`, `spotify.play`)
        return f"{_name(node.value)}.{node.attr}"
    raise PyCallError(f"call target is not a name ({type(node).__name__})")


def _literal(node: ast.expr, where: str) -> Any:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise PyCallError(f"argument {where} is not a literal value") from None
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, (set, frozenset, bytes, complex)):
        raise PyCallError(f"argument {where} is a {type(value).__name__}, not a JSON value")
    return value


def parse_calls(text: str, params: dict[str, list[str]] | None = None) -> list[dict[str, Any]]:
    """`name(k=v, ...)` calls of a whole text (a list of calls or one call) → [{name, arguments}].

    `params` (tool name → declared parameter names, in order) lets positional arguments take their names;
    without a declaration a positional argument is an error, never a guessed name."""
    stripped = text.strip().removeprefix("<|python_tag|>").strip()
    if not stripped or len(stripped) > MAX_CALL_TEXT:
        raise PyCallError("no call code")
    try:
        tree = ast.parse(stripped, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise PyCallError("not Python call syntax") from None
    body = tree.body
    nodes = body.elts if isinstance(body, (ast.List, ast.Tuple)) else [body]
    if not nodes or not all(isinstance(n, ast.Call) for n in nodes):
        raise PyCallError("not a list of calls")
    calls = []
    for node in nodes:
        assert isinstance(node, ast.Call)
        name = _name(node.func)
        args: dict[str, Any] = {}
        names = (params or {}).get(name)
        for i, arg in enumerate(node.args):
            if names is None or i >= len(names):
                raise PyCallError(f"{name}(): positional argument {i + 1} names no declared parameter")
            args[names[i]] = _literal(arg, f"{i + 1} of {name}()")
        for kw in node.keywords:
            if kw.arg is None:
                raise PyCallError(f"{name}(): **kwargs is not a literal argument list")
            args[kw.arg] = _literal(kw.value, f"{kw.arg!r} of {name}()")
        calls.append({"name": name, "arguments": args})
    return calls


def as_tool_calls(text: str, prefix: str, params: dict[str, list[str]] | None = None) -> list[dict[str, Any]]:
    """Python call code → OpenAI tool calls with JSON-string arguments (ids `prefix_0`, `prefix_1`, ...)."""
    return [normalize_call(c, f"{prefix}_{j}") for j, c in enumerate(parse_calls(text, params))]


def starts_like_calls(text: str) -> bool:
    return bool(CALL_START.match(text.strip()))


def looks_like_calls(text: str, declared: set[str] | None = None) -> bool:
    """Whether a whole turn is call code: a bracketed list of calls, or a bare call of a declared tool."""
    try:
        calls = parse_calls(text)
    except PyCallError:
        return False
    if declared:
        return all(c["name"] in declared for c in calls)
    return text.strip().removeprefix("<|python_tag|>").strip().startswith("[")
