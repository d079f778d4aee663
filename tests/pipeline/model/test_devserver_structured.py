"""The dev server's structured output through the real `openai` client over loopback HTTP: response_format
(json_schema, json_object) and forced tool calls by constrained decoding (llguidance), tool-call markers
turned into `tool_calls`, and the llm policy's probe against it. The toy target has random-ish weights:
only the constraint can make its replies valid, which is what these tests check."""

from __future__ import annotations

import asyncio
import json

import openai
import pytest

USER = [{"role": "user", "content": "Rate the datasets."}]
JUDGEMENT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["verdicts"],
    "properties": {
        "verdicts": {
            "type": "array",
            "minItems": 1,
            "maxItems": 2,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["repo_id", "relevance"],
                "properties": {
                    "repo_id": {"type": "string", "enum": ["a/traj", "b/chat"]},
                    "relevance": {"type": "number", "minimum": 0, "maximum": 1},
                },
            },
        }
    },
}
SEARCH = {
    "type": "function",
    "function": {
        "name": "search_hub",
        "parameters": {
            "type": "object",
            "additionalProperties": False,
            "required": ["query"],
            "properties": {"query": {"type": "string", "pattern": "^[a-z]{1,12}$"}},
        },
    },
}
INSPECT = {
    "type": "function",
    "function": {
        "name": "inspect_dataset",
        "parameters": {
            "type": "object",
            "additionalProperties": False,
            "required": ["repo_id"],
            "properties": {"repo_id": {"type": "string", "enum": ["a/traj"]}},
        },
    },
}


def _ask(client, toy_model_dir, **kw):
    request = {
        "model": toy_model_dir.name,
        "messages": USER,
        "max_tokens": 120,
        "temperature": 1.0,
        "seed": 3,
        "extra_body": {"chat_template_kwargs": {"enable_thinking": False}},
    } | kw
    return client.chat.completions.create(**request)


def test_json_schema_response_format_constrains_the_reply(client, toy_model_dir):
    for seed in (1, 2):
        resp = _ask(
            client,
            toy_model_dir,
            seed=seed,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "Judgement", "schema": JUDGEMENT, "strict": True},
            },
        )
        choice = resp.choices[0]
        assert choice.finish_reason == "stop", choice.message.content  # ended where the JSON ended
        answer = json.loads(choice.message.content)
        assert 1 <= len(answer["verdicts"]) <= 2
        assert all(v["repo_id"] in ("a/traj", "b/chat") and 0 <= v["relevance"] <= 1 for v in answer["verdicts"])
        assert resp.usage.completion_tokens > 0


def test_without_a_response_format_the_toy_does_not_write_this_json(client, toy_model_dir):
    text = _ask(client, toy_model_dir, seed=1).choices[0].message.content
    with pytest.raises(ValueError):  # the baseline: the constraint, not the model, makes the JSON above
        json.loads(text)


def test_json_object_response_format(client, toy_model_dir):
    """Any object is allowed, so a random model may ramble past max_tokens: it still writes one object."""
    choice = _ask(client, toy_model_dir, response_format={"type": "json_object"}, max_tokens=40).choices[0]
    assert choice.message.content.startswith("{")
    if choice.finish_reason == "stop":
        assert isinstance(json.loads(choice.message.content), dict)


def test_forced_tool_calls_come_back_as_tool_calls(client, toy_model_dir):
    named = _ask(
        client,
        toy_model_dir,
        tools=[SEARCH, INSPECT],
        tool_choice={"type": "function", "function": {"name": "inspect_dataset"}},
    ).choices[0]
    assert named.finish_reason == "tool_calls" and named.message.content is None
    call = named.message.tool_calls[0]
    assert call.type == "function" and call.id.startswith("call_") and call.function.name == "inspect_dataset"
    assert json.loads(call.function.arguments) == {"repo_id": "a/traj"}
    required = _ask(client, toy_model_dir, tools=[SEARCH, INSPECT], tool_choice="required", seed=5).choices[0]
    assert required.finish_reason == "tool_calls" and required.message.tool_calls[0].function.name in (
        "search_hub",
        "inspect_dataset",
    )
    args = json.loads(required.message.tool_calls[0].function.arguments)
    assert set(args) in ({"query"}, {"repo_id"})


def test_a_forced_tool_call_streams_as_one_tool_calls_delta(client, toy_model_dir):
    stream = _ask(client, toy_model_dir, tools=[SEARCH], tool_choice="required", stream=True)
    chunks = list(stream)
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    calls = [tc for d in deltas for tc in (d.tool_calls or [])]
    assert len(calls) == 1 and calls[0].function.name == "search_hub" and calls[0].index == 0
    assert json.loads(calls[0].function.arguments)["query"].isalpha()
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert not any(d.content for d in deltas)  # the call's JSON is not also streamed as text


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"response_format": {"type": "xml"}}, "response_format.type 'xml'"),
        ({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}, "must be a JSON schema object"),
        (
            {"tools": [SEARCH], "tool_choice": {"type": "function", "function": {"name": "rm_rf"}}},
            "not among the tools",
        ),
        ({"tool_choice": "required"}, "'required' needs tools"),
        ({"tools": [{"type": "function"}]}, r"tools\[0\] must be"),
        (
            {"tools": [SEARCH], "tool_choice": "required", "response_format": {"type": "json_object"}},
            "cannot be combined",
        ),
    ],
)
def test_bad_structured_requests_are_400_with_the_reason(client, toy_model_dir, kwargs, message):
    with pytest.raises(openai.BadRequestError, match=message):
        _ask(client, toy_model_dir, **kwargs)


def test_the_llm_policy_probe_finds_both_forms_on_the_dev_server(devserver, toy_model_dir):
    from agents.policies.llm_probe import probe

    client = openai.AsyncOpenAI(base_url=devserver.url, api_key="unused", max_retries=0)
    caps = asyncio.run(probe(client, toy_model_dir.name))
    assert (caps.json_schema, caps.tools, caps.reached) == (True, True, True), caps.detail
    assert caps.tokens > 0 and caps.context == 2048  # the toy's context, from /v1/models


@pytest.mark.slow
def test_a_client_that_hangs_up_frees_the_model_for_the_next_request(client, toy_model_dir):
    import time

    # A reply that cannot end early: a JSON string of at least 800 characters (hundreds of tokens).
    long_reply = {
        "model": toy_model_dir.name,
        "messages": USER,
        "max_tokens": 1900,
        "temperature": 1.0,
        "seed": 1,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "long", "schema": {"type": "string", "minLength": 800}},
        },
        "extra_body": {"chat_template_kwargs": {"enable_thinking": False}},
    }
    patient = openai.OpenAI(base_url=client.base_url, api_key="unused", max_retries=0, timeout=600)
    started = time.monotonic()
    full = patient.chat.completions.create(**long_reply)
    whole = time.monotonic() - started
    assert len(json.loads(full.choices[0].message.content)) >= 800
    impatient = openai.OpenAI(base_url=client.base_url, api_key="unused", max_retries=0, timeout=whole / 10)
    with pytest.raises(openai.APITimeoutError):
        impatient.chat.completions.create(**long_reply)
    started = time.monotonic()
    _ask(client, toy_model_dir, max_tokens=4)
    # not queued behind the abandoned generation (which alone would take `whole` again)
    assert time.monotonic() - started < whole / 2
