"""Regeneration of agentic rows: the conversation's tools go with every request (`tools=`), earlier
structured tool calls and their results are replayed through the OpenAI API, the target answers where the
source had a text answer, and the replayed calls are never trained. Over real loopback HTTP: the fake
OpenAI server (keeps every request body) and the real dev server in front of the toy target."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
from regen_helpers import write_mix

from adapters.records import Conversation, Message, Source, Tool, record_id
from catalog.db import Catalog
from pipeline.regenerate.config import RegenConfig
from pipeline.regenerate.run import regen_dir, run_regenerate

SEARCH = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the docs.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
}
CALL = {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": '{"q": "x"}'}}


def _agentic(index: int = 0) -> Conversation:
    return Conversation(
        id=record_id("test/agentic", "default", "train", index),
        source=Source(repo_id="test/agentic", revision="0" * 40, config="default", split="train", row_index=index),
        category="agentic",
        mode="regenerate",
        tools=[Tool.model_validate(SEARCH)],
        messages=[
            Message(role="system", content="You can search."),
            Message(role="user", content="Hits for x?"),
            Message.model_validate({"role": "assistant", "content": "Searching.", "tool_calls": [CALL]}),
            Message(role="tool", content="3 hits", tool_call_id="call_1", name="search"),
            Message(role="assistant", content="ORIGINAL ANSWER"),
            Message(role="user", content="And for y?"),
            Message(role="assistant", content="ORIGINAL 2"),
        ],
    )


def _config(url: str, **extra) -> RegenConfig:
    return RegenConfig.model_validate(
        {
            "mix": "m",
            "endpoints": [url],
            "retry": {"backoff_s": 0.01, "max_attempts": 2, "timeout_s": 60.0},
            "partitions": [{"name": "all", "max_prompt": None, "concurrency": 1, "max_tokens": 8}],
            **extra,
        }
    )


def _results(home) -> list[dict]:
    return [r for p in sorted(regen_dir(home, "m").glob("results-*.parquet")) for r in pq.read_table(p).to_pylist()]


def test_tools_and_replayed_calls_travel_through_the_api(home, fake_server):
    server = fake_server()
    write_mix(home, "m", [_agentic()])
    assert run_regenerate(_config(server.url), home, Catalog(home), show_progress=False).counts["out"] == 1
    first, second = server.behaviour.log
    assert first["tools"] == second["tools"] == [SEARCH]
    assert first["messages"] == [
        {"role": "system", "content": "You can search."},
        {"role": "user", "content": "Hits for x?"},
        {"role": "assistant", "content": "Searching.", "tool_calls": [CALL]},
        {"role": "tool", "content": "3 hits", "tool_call_id": "call_1", "name": "search"},
    ]
    assert "ORIGINAL" not in json.dumps(server.behaviour.log)  # text answers are the target's own
    [row] = _results(home)
    out = Conversation.model_validate_json(row["conversation"])
    assert [m.role for m in out.messages] == ["system", "user", "assistant", "tool", "assistant", "user", "assistant"]
    replayed, answer = out.messages[2], out.messages[4]
    assert replayed.train is False and replayed.tool_calls[0].id == "call_1"  # the source's call: never trained
    assert answer.train is None and answer.content == second["messages"][4]["content"]
    assert out.tools[0].function.name == "search"


def test_the_dev_server_renders_the_tools_and_replayed_calls_it_receives(home, devserver_url):
    import httpx
    from transformers import AutoTokenizer

    from pipeline.regenerate.conversation import _wire, prompt_messages

    write_mix(home, "m", [_agentic()])
    config = _config(devserver_url, thinking=False, include_length_truncated=True)
    assert run_regenerate(config, home, Catalog(home), show_progress=False).counts["out"] == 1
    # The first answer's prompt_tokens (the server's usage) = the toy template's rendering WITH the
    # declarations and the replayed call: the server got both, structured, and rendered them.
    root = httpx.get(devserver_url + "/models").json()["data"][0]["root"]
    tok = AutoTokenizer.from_pretrained(root)
    context = [_wire(m) for m, _ in prompt_messages(_agentic())][:4]
    rendered = tok.apply_chat_template(
        context, tools=[SEARCH], tokenize=False, add_generation_prompt=True, enable_thinking=False
    )
    without = tok.apply_chat_template(context[:2], tokenize=False, add_generation_prompt=True, enable_thinking=False)
    assert "functions.search:0" in rendered and "tool_declare" in rendered
    turns = json.loads(_results(home)[0]["turns"])
    assert turns[0]["usage"]["prompt_tokens"] == len(tok(rendered, add_special_tokens=False)["input_ids"])
    assert turns[0]["usage"]["prompt_tokens"] > len(tok(without, add_special_tokens=False)["input_ids"])
