"""Tool-call markers the model generates → OpenAI `tool_calls`: Kimi section tokens (the toy's template,
decoded through its real tokenizer and the dev server's real Detokenizer) and Hermes/ChatML <tool_call>."""

from __future__ import annotations

import json

from pipeline.servers.devserver.toolcalls import parse_tool_calls

NAMES = {"search_hub", "inspect_dataset"}


def test_kimi_markers_through_the_real_tokenizer_and_detokenizer(toy_model_dir):
    from pipeline.servers.devserver.app import _answer
    from pipeline.servers.devserver.engine import Detokenizer, Engine
    from pipeline.servers.devserver.protocol import ChatRequest

    engine = Engine(toy_model_dir)
    generated = (
        "Let me look.<|tool_calls_section_begin|><|tool_call_begin|>functions.search_hub:0"
        '<|tool_call_argument_begin|>{"query": "swe"}<|tool_call_end|><|tool_call_begin|>'
        'functions.inspect_dataset:1<|tool_call_argument_begin|>{"repo_id": "a/b"}<|tool_call_end|>'
        "<|tool_calls_section_end|><|im_end|>"
    )
    ids = engine.tokenizer(generated, add_special_tokens=False)["input_ids"]
    assert engine.tokenizer.convert_tokens_to_ids("<|tool_call_begin|>") in ids  # markers are special tokens
    detok = Detokenizer(engine, thinking=False)
    for token in ids:
        detok.push(token)
    tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in NAMES]
    req = ChatRequest(model="m", messages=[{"role": "user", "content": "x"}], tools=tools)
    content, calls, finish = _answer(req, detok, "stop")
    assert (content, finish) == ("Let me look.", "tool_calls")
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls] == [
        ("search_hub", {"query": "swe"}),
        ("inspect_dataset", {"repo_id": "a/b"}),
    ]
    assert len({c["id"] for c in calls}) == 2
    # tool_choice none: the same text stays content
    none = ChatRequest(model="m", messages=[{"role": "user", "content": "x"}], tools=tools, tool_choice="none")
    assert _answer(none, detok, "stop") == (detok.text["content"], None, "stop")


def test_hermes_tool_call_blocks():
    text = (
        'I will search.\n<tool_call>\n{"name": "search_hub", "arguments": {"query": "swe"}}\n</tool_call>\n'
        '<tool_call>{"name": "inspect_dataset", "arguments": {"repo_id": "a/b"}}</tool_call>'
    )
    content, calls = parse_tool_calls(text, NAMES)
    assert content == "I will search.\n" and [c["function"]["name"] for c in calls] == ["search_hub", "inspect_dataset"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"query": "swe"} and calls[0]["type"] == "function"


def test_undeclared_tools_and_broken_json_stay_text():
    for text in (
        '<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>',
        '<tool_call>{"name": "search_hub", "arguments": {"query": </tool_call>',
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.search_hub:0<|tool_call_argument_begin|>"
        "[1, 2]<|tool_call_end|><|tool_calls_section_end|>",
        "no calls here",
    ):
        assert parse_tool_calls(text, NAMES) == (text, [])
