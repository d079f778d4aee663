"""Helpers for the find tests: an env pointing at a local Hub, and a FAKE (scripted) LLM behind the real
openai client for the llm policy's control-flow tests."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import httpx
import openai

from agents.policies.llm_probe import HELLO, Capabilities
from agents.run import FindEnv
from agents.tools import HubTools


def make_env(hub_url: str, home: Path, **kw: Any) -> FindEnv:
    return FindEnv(home=home, endpoint=hub_url, viewer_base=hub_url + "/viewer", **kw)


# -- FAKE LLM (scripted replies) for control-flow tests of the llm policy, behind the REAL openai client --
# What a server honouring both structured forms reports; unit tests of the policy start from it (no probe).
CAPS = Capabilities(endpoint="http://llm.invalid/v1", model="m", json_schema=True, tools=True, reached=True)


def probe_reply(
    body: dict[str, Any], json_schema: bool = True, tools: bool = True, json_object_schema: bool = False
) -> dict[str, Any]:
    """The FAKE model's answer to the run's probe requests ("Say hello."), as a server with these forms."""
    if "response_format" in body:
        honoured = json_schema if body["response_format"]["type"] == "json_schema" else json_object_schema
        return {"content": '{"ok": true}' if honoured else "Hello!"}
    return calls(("ping", {"word": "pong"})) if tools else {"content": "Hello!"}


def scripted_llm(respond: Callable[[dict[str, Any]], dict[str, Any]], probe: bool = False) -> openai.AsyncOpenAI:
    """`respond(request body) -> assistant message` (content and/or tool_calls), or `{"__http__": {status, body}}`
    for an error answer; each reply costs 60 tokens.
    probe: the run's probe requests get `probe_reply` and never reach `respond`."""

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        is_probe = probe and body["messages"] == HELLO
        reply = probe_reply(body) if is_probe else respond(body)
        if "__http__" in reply:  # an error answer: {"__http__": {"status": 500, "body": {...}}}
            return httpx.Response(reply["__http__"]["status"], json=reply["__http__"]["body"])
        message = {"role": "assistant", "content": None, **reply}
        return httpx.Response(
            200,
            json={
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                    }
                ],
                "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
            },
        )

    return openai.AsyncOpenAI(
        base_url="http://llm.invalid/v1",
        api_key="x",
        max_retries=0,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
    )


def script(replies: list[dict[str, Any]], seen: list[dict[str, Any]]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Replies in order; every request body is kept in `seen`."""
    queue = iter(replies)

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        seen.append(body)
        return next(queue)

    return respond


def calls(*specs: tuple[str, dict[str, Any] | str]) -> dict[str, Any]:
    """An assistant message with tool calls; string arguments are sent as-is (to test malformed JSON)."""
    return {
        "tool_calls": [
            {
                "id": f"call-{i}",
                "type": "function",
                "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)},
            }
            for i, (name, args) in enumerate(specs)
        ]
    }


def answer(*verdicts: tuple[str, float, str]) -> dict[str, Any]:
    return {
        "content": json.dumps(
            {"verdicts": [{"repo_id": r, "relevance": rel, "reason": why} for r, rel, why in verdicts]}
        )
    }


class InjectedFailure(RuntimeError):
    """What FailingHubTools raises: recorded as the agent's error, by this name."""


class FailingHubTools(HubTools):
    """A test double over the real Hub tools: the named categories' searches and inspections raise, to show
    that one failing agent is recorded while the others land (kept out of the product's HubTools)."""

    def __init__(self, *args: Any, fail_categories: Collection[str], **kw: Any):
        super().__init__(*args, **kw)
        self.fail_categories = frozenset(fail_categories)

    def _fail(self, category: str) -> None:
        if category in self.fail_categories:
            raise InjectedFailure(f"injected failure for category {category!r}")

    def search(self, category: str, query: str | None = None, tag: str | None = None) -> list[dict[str, Any]]:
        self._fail(category)
        return super().search(category, query, tag)

    def inspect(self, category: str, hit: dict[str, Any]) -> dict[str, Any]:
        self._fail(category)
        return super().inspect(category, hit)
