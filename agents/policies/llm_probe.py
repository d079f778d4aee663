"""What structured output the LLM endpoint honours, probed once per `find` run and recorded.

Two tiny requests (at most 64 tokens each), both asked "Say hello." so that only the server, never the model's
good will, can make the reply structured:
  json_schema  `response_format` with a one-field JSON schema: passes when the reply validates against it
               (llama.cpp's server, vLLM, SGLang and serve-dev turn this into constrained decoding);
               where it fails, the same schema as `{"type": "json_object", "schema": ...}`, the form
               llama-cpp-python's server takes (it refuses `json_schema`);
  tools        a forced (named) tool call: passes when a `tool_calls` entry with that name and JSON-object
               arguments comes back.
The policy asks in the forms that passed; when neither request got a JSON chat completion back, the
endpoint is unusable for this run and every agent falls back at once with the probe's cause.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agents.policies.llm_calls import LLMProblem, complete, endpoint_of

HELLO = [{"role": "user", "content": "Say hello."}]
OK_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}
PING = {
    "type": "function",
    "function": {
        "name": "ping",
        "description": "Answer the ping.",
        "parameters": {
            "type": "object",
            "properties": {"word": {"type": "string", "enum": ["pong"]}},
            "required": ["word"],
            "additionalProperties": False,
        },
    },
}


class Capabilities(BaseModel):
    model_config = ConfigDict(extra="forbid")
    endpoint: str
    model: str
    json_schema: bool = False
    json_object_schema: bool = Field(False, description='{"type": "json_object", "schema": ...} honoured instead')
    tools: bool = False
    reached: bool = Field(False, description="at least one probe got a JSON chat completion back")
    detail: dict[str, str] = Field(default_factory=dict, description="per probe: ok, or cause: detail")
    first_problem: dict[str, Any] | None = Field(None, description="cause/detail/status of the first failure")
    tokens: int = 0
    context: int | None = Field(None, description="the model's context in tokens, when /v1/models says it")

    @property
    def answer_format(self) -> str:
        if self.json_schema:
            return "json_schema"
        return "json_object_schema" if self.json_object_schema else "prompt"

    def response_format(self, name: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        """The request's `response_format` for an answer that must validate against `schema`, in the form this
        endpoint honours; None when it honours none (the prompt asks for JSON and the reply is validated)."""
        if self.json_schema:
            return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}
        if self.json_object_schema:
            return {"type": "json_object", "schema": schema}
        return None


async def _hello(client: Any, model: str, timeout: float, caps: Capabilities, **request: Any) -> Any:
    """One short probe request (HELLO, 64 tokens, temperature 0) with `request`'s extras; an answer means
    the endpoint was reached, and its tokens are counted in `caps`. Returns the first choice."""
    choice, tokens = await complete(
        client, model, None, timeout, messages=HELLO, max_completion_tokens=64, temperature=0, **request
    )
    caps.reached, caps.tokens = True, caps.tokens + tokens
    return choice


async def _structured(
    client: Any, model: str, timeout: float, caps: Capabilities, form: str, response_format: dict[str, Any]
) -> None:
    choice = await _hello(client, model, timeout, caps, response_format=response_format)
    try:
        value = json.loads(choice.message.content or "")
    except ValueError:
        raise LLMProblem("not_json", f"response_format {form} was not honoured: the reply is not JSON") from None
    if not (isinstance(value, dict) and set(value) == {"ok"} and isinstance(value["ok"], bool)):
        raise LLMProblem("schema", f"response_format {form} was not honoured: the reply is other JSON")


async def _json_schema(client: Any, model: str, timeout: float, caps: Capabilities) -> None:
    schema = {"name": "probe", "schema": OK_SCHEMA, "strict": True}
    await _structured(client, model, timeout, caps, "json_schema", {"type": "json_schema", "json_schema": schema})


async def _json_object_schema(client: Any, model: str, timeout: float, caps: Capabilities) -> None:
    if caps.json_schema:
        raise _NotNeeded
    await _structured(client, model, timeout, caps, "json_object+schema", {"type": "json_object", "schema": OK_SCHEMA})


class _NotNeeded(Exception):
    """A fallback form is probed only where the standard one failed."""


async def _tools(client: Any, model: str, timeout: float, caps: Capabilities) -> None:
    forced = {"type": "function", "function": {"name": "ping"}}
    choice = await _hello(client, model, timeout, caps, tools=[PING], tool_choice=forced)
    calls = choice.message.tool_calls or []
    if not calls or getattr(calls[0], "function", None) is None or calls[0].function.name != "ping":
        raise LLMProblem("no_tool_calls", "a forced tool call came back as text, not tool_calls")
    try:
        args = json.loads(calls[0].function.arguments or "")
    except ValueError:
        raise LLMProblem("tool_args", "a forced tool call's arguments are not JSON") from None
    if not isinstance(args, dict):
        raise LLMProblem("tool_args", "a forced tool call's arguments are not a JSON object")


async def _context(client: Any, model: str, timeout: float) -> int | None:
    """max_model_len (vLLM, SGLang, serve-dev) or meta.n_ctx_train (llama.cpp) of the model, if listed."""
    try:
        page = await client.models.list(timeout=timeout)
    except Exception:  # noqa: BLE001 — optional information: any failure just leaves it unknown
        return None
    for card in getattr(page, "data", None) or []:
        if getattr(card, "id", None) == model:
            extra = card.model_extra or {}
            value = extra.get("max_model_len") or (extra.get("meta") or {}).get("n_ctx_train")
            return int(value) if isinstance(value, int) and value > 0 else None
    return None


async def probe(client: Any, model: str, timeout: float = 60.0) -> Capabilities:
    caps = Capabilities(endpoint=endpoint_of(client), model=model)
    caps.context = await _context(client, model, timeout)
    for name, check in (("json_schema", _json_schema), ("json_object_schema", _json_object_schema), ("tools", _tools)):
        try:
            await check(client, model, timeout, caps)
        except _NotNeeded:
            continue
        except LLMProblem as problem:
            caps.detail[name] = f"{problem.cause}: {problem.detail}"
            if problem.cause == "http_status" and problem.status in (400, 422):
                caps.reached = True  # the server is there; it refused this form (e.g. no tool support)
            caps.first_problem = caps.first_problem or {
                "cause": problem.cause,
                "detail": problem.detail,
                "status": problem.status,
            }
            continue
        setattr(caps, name, True)
        caps.detail[name] = "ok"
    return caps
