"""Helpers for the find tests and benchmark: an env pointing at a local Hub, and small dataset repos
written into a folder for the local Hub server (the 2,000-repo benchmark generator uses `write_repo`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
