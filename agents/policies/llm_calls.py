"""One counted request to the LLM endpoint, and every way it can go wrong, named.

A user who points draftset at their own model must be able to tell a bad prompt from a bad model or a
protocol mismatch, so each problem gets one cause from a fixed vocabulary (stored in `llm_events.cause`,
summarised by `find`):

  http_status    the endpoint answered an HTTP error (the status is in `status` and the detail)
  not_json       the reply is not a JSON chat completion (an HTML page: wrong base URL or a proxy), or the
                 answer text is not JSON
  schema         the answer is JSON but does not validate; the detail names the field
  tool_args      a tool call's arguments did not validate (sent back to the model as an error message)
  no_tool_calls  the model answered in text without using the tools it was offered
  budget         the agent's LLM call/token budget or its wall-time share was spent
  timeout        no reply within the time left
  connection     the endpoint could not be reached

Tokens are counted from the usage of every reply that carries one, valid or not.
"""

from __future__ import annotations

import json
from typing import Any

import openai
from pydantic import ValidationError

from agents.state import AgentCounts

CAUSES = ("http_status", "not_json", "schema", "tool_args", "no_tool_calls", "budget", "timeout", "connection")


class LLMProblem(Exception):
    def __init__(self, cause: str, detail: str, status: int | None = None):
        assert cause in CAUSES, cause
        super().__init__(f"{cause}: {detail}")
        self.cause, self.detail, self.status = cause, detail[:300], status


def validation_detail(exc: ValidationError) -> str:
    """The first few failing fields, by path (never the model's input, which may be long or hostile)."""
    parts = [f"{'.'.join(map(str, e['loc'])) or 'answer'}: {e['msg']}" for e in exc.errors()[:3]]
    more = exc.error_count() - len(parts)
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


def parse_json(text: str | None) -> Any:
    """The answer text as JSON, or LLMProblem(not_json). Tolerates a ```json fence (small models add one)."""
    body = (text or "").strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    try:
        return json.loads(body)
    except ValueError:
        shown = " ".join(body.split())[:80]
        raise LLMProblem("not_json", f"the answer is not JSON: {shown!r}" if shown else "the answer is empty") from None


def endpoint_of(client: Any) -> str:
    return str(getattr(client, "base_url", "?")).rstrip("/")


async def complete(
    client: Any, model: str, meter: AgentCounts | None, timeout: float, **request: Any
) -> tuple[Any, int]:
    """One chat completion: (first choice, tokens used), or LLMProblem. Counted in `meter` when given."""
    if meter is not None:
        meter.llm_calls += 1
    where = endpoint_of(client)
    if "max_completion_tokens" in request:
        # The length cap under both names: vLLM, SGLang and llama.cpp read either, but llama-cpp-python's server
        # reads only `max_tokens` and otherwise generates to the end of its context (minutes on a CPU).
        request.setdefault("max_tokens", request["max_completion_tokens"])
    try:
        raw = await client.chat.completions.with_raw_response.create(model=model, timeout=timeout, **request)
    except openai.APITimeoutError:
        raise LLMProblem("timeout", f"no reply from the LLM endpoint {where} within {timeout:.0f}s") from None
    except openai.APIConnectionError as exc:
        raise LLMProblem("connection", f"cannot reach the LLM endpoint {where}: {exc}") from None
    except openai.APIStatusError as exc:
        message = " ".join(str(getattr(exc, "message", exc)).split())[:200]
        raise LLMProblem(
            "http_status", f"HTTP {exc.status_code} from the LLM endpoint {where}: {message}", exc.status_code
        ) from None
    kind = raw.headers.get("content-type", "")
    if "json" not in kind:  # e.g. a web UI or a proxy's login page answering 200 with text/html
        raise LLMProblem(
            "not_json",
            f"the LLM endpoint {where} answered HTTP {raw.status_code} with "
            f"{kind or 'no content type'}, not a JSON chat completion",
            raw.status_code,
        )
    try:
        completion = raw.parse()
    except (ValidationError, ValueError, TypeError) as exc:
        raise LLMProblem("not_json", f"the LLM endpoint {where} sent unreadable JSON: {exc}") from None
    if not isinstance(completion, openai.types.chat.ChatCompletion):
        raise LLMProblem("not_json", f"the LLM endpoint {where} did not send a chat completion object")
    if meter is not None and completion.usage is not None:
        meter.llm_tokens += completion.usage.total_tokens or 0
    if not completion.choices or completion.choices[0].message is None:
        raise LLMProblem("schema", "choices: the reply has no message")
    return completion.choices[0], (completion.usage.total_tokens if completion.usage else 0)
