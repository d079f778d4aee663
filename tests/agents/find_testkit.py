"""Helpers for the find tests and benchmark: an env pointing at a local Hub, and small dataset repos
written into a folder for the local Hub server (the 2,000-repo benchmark generator uses `write_repo`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai
import yaml

from agents.run import FindEnv


def make_env(hub_url: str, home: Path, **kw: Any) -> FindEnv:
    return FindEnv(home=home, endpoint=hub_url, viewer_base=hub_url + "/viewer", **kw)


def write_repo(root: Path, repo_id: str, rows: list[dict[str, Any]], card: dict[str, Any], body: str = "") -> Path:
    folder = root / repo_id
    (folder / "data").mkdir(parents=True, exist_ok=True)
    (folder / "README.md").write_text(f"---\n{yaml.safe_dump(card, sort_keys=True)}---\n{body}\n")
    with (folder / "data" / "train.jsonl").open("w") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    return folder


def chat_rows(n: int, topic: str) -> list[dict[str, Any]]:
    return [{"messages": [{"role": "user", "content": f"{topic} question {i}: how do I fix this bug?"},
                          {"role": "assistant", "content": f"answer {i} " * 20}]} for i in range(n)]


def build_minihub(root: Path) -> list[str]:
    """Six repos: agentic, coding, target-native, tabular, unlicensed chat, French chat."""
    text = {"task_categories": ["text-generation"], "language": ["en"]}
    write_repo(root, "acme/agent-trajectories", chat_rows(30, "agent tool"),
               {**text, "license": "mit", "pretty_name": "Agent trajectories"}, "SWE agent trajectories with tools.")
    write_repo(root, "acme/code-instruct", [{"instruction": f"write code {i}", "output": "def f(): pass"}
                                            for i in range(40)],
               {**text, "license": "apache-2.0"}, "Coding instructions in python.")
    write_repo(root, "fans/kimi-chat", chat_rows(20, "chat"), {**text, "license": "mit"},
               "Responses generated with moonshotai/Kimi-K2.")
    write_repo(root, "tab/housing-prices", [{"price": i * 1.5, "rooms": i} for i in range(20)],
               {"task_categories": ["tabular-regression"], "license": "mit"}, "Numbers.")
    write_repo(root, "scrape/chat-dump", chat_rows(10, "chat"), {"task_categories": ["text-generation"]}, "No license.")
    write_repo(root, "fr/agent-chat", chat_rows(10, "agent"),
               {"task_categories": ["text-generation"], "language": ["fr"], "license": "mit"}, "Agents en français.")
    return ["acme/agent-trajectories", "acme/code-instruct", "fans/kimi-chat", "tab/housing-prices",
            "scrape/chat-dump", "fr/agent-chat"]


# -- FAKE LLM (scripted replies) for control-flow tests of the llm policy, behind the REAL openai client --
def scripted_llm(respond: Callable[[dict[str, Any]], dict[str, Any]]) -> openai.AsyncOpenAI:
    """`respond(request body) -> assistant message` (content and/or tool_calls); each reply costs 60 tokens."""

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        message = {"role": "assistant", "content": None, **respond(body)}
        return httpx.Response(200, json={
            "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}})

    return openai.AsyncOpenAI(base_url="http://llm.invalid/v1", api_key="x", max_retries=0,
                              http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)))


def script(replies: list[dict[str, Any]], seen: list[dict[str, Any]]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Replies in order; every request body is kept in `seen`."""
    queue = iter(replies)

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        seen.append(body)
        return next(queue)

    return respond


def calls(*specs: tuple[str, dict[str, Any] | str]) -> dict[str, Any]:
    """An assistant message with tool calls; string arguments are sent as-is (to test malformed JSON)."""
    return {"tool_calls": [{"id": f"call-{i}", "type": "function", "function": {
        "name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
        for i, (name, args) in enumerate(specs)]}


def answer(*verdicts: tuple[str, float, str]) -> dict[str, Any]:
    return {"content": json.dumps({"verdicts": [{"repo_id": r, "relevance": rel, "reason": why}
                                                for r, rel, why in verdicts]})}
