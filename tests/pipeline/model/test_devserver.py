"""The dev server through the real `openai` client over loopback HTTP."""

from __future__ import annotations

import openai
import pytest

USER = [{"role": "user", "content": "What is the capital of France?"}]


def _render_ids(toy_model_dir, messages, thinking=True):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(toy_model_dir)
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, enable_thinking=thinking)
    return tok(text, add_special_tokens=False)["input_ids"]


def test_models_and_health(client, devserver, toy_model_dir):
    assert [m.id for m in client.models.list().data] == [toy_model_dir.name]
    import httpx

    assert httpx.get(devserver.url.removesuffix("/v1") + "/health").json()["status"] == "ok"


def test_non_stream_usage_token_ids_and_length_finish(client, toy_model_dir):
    resp = client.chat.completions.create(
        model=toy_model_dir.name, messages=USER, max_tokens=5, temperature=0, extra_body={"return_token_ids": True}
    )
    choice = resp.choices[0]
    assert choice.finish_reason == "length"
    assert choice.model_extra["token_ids"] and len(choice.model_extra["token_ids"]) == 5
    assert resp.model_extra["prompt_token_ids"] == _render_ids(toy_model_dir, USER)
    assert resp.usage.prompt_tokens == len(resp.model_extra["prompt_token_ids"])
    assert resp.usage.completion_tokens == 5 and resp.usage.total_tokens == resp.usage.prompt_tokens + 5
    assert "reasoning_content" in choice.message.model_extra  # thinking is on by default


def test_stream_matches_non_stream(client, toy_model_dir):
    kwargs = dict(
        model=toy_model_dir.name,
        messages=USER,
        max_tokens=12,
        temperature=0,
        extra_body={"return_token_ids": True, "chat_template_kwargs": {"enable_thinking": False}},
    )
    whole = client.chat.completions.create(**kwargs)
    chunks = list(client.chat.completions.create(stream=True, stream_options={"include_usage": True}, **kwargs))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    ids = [t for c in chunks if c.choices for t in (c.choices[0].model_extra.get("token_ids") or [])]
    assert text == whole.choices[0].message.content
    assert ids == whole.choices[0].model_extra["token_ids"]
    assert chunks[0].model_extra["prompt_token_ids"] == whole.model_extra["prompt_token_ids"]
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finish == [whole.choices[0].finish_reason]
    assert chunks[-1].usage.completion_tokens == len(ids) == whole.usage.completion_tokens
    assert whole.model_extra["prompt_token_ids"][-2:] == _render_ids(toy_model_dir, USER, thinking=False)[-2:]
    assert "reasoning_content" not in (whole.choices[0].message.model_extra or {})


def test_seeded_sampling_is_reproducible(client, toy_model_dir):
    def sample(seed):
        resp = client.chat.completions.create(
            model=toy_model_dir.name,
            messages=USER,
            max_tokens=8,
            temperature=1.0,
            top_p=0.9,
            seed=seed,
            extra_body={"return_token_ids": True},
        )
        return resp.choices[0].model_extra["token_ids"]

    assert sample(7) == sample(7)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"model": "not-this-one"}, openai.NotFoundError, "is not served here"),
        ({"messages": [{"role": "user", "content": "word " * 3000}]}, openai.BadRequestError, "context is 2048"),
        ({"n": 2}, openai.BadRequestError, "n must be 1"),
        ({"seed": 2**70}, openai.BadRequestError, "seed"),
        ({"max_tokens": 2**40}, openai.BadRequestError, "max_tokens"),
        ({"messages": [{"role": "narrator", "content": "hi"}]}, openai.BadRequestError, "unknown role"),
        (
            {"messages": [{"role": "assistant", "content": "", "tool_calls": 5}]},
            openai.BadRequestError,
            r"messages\[0\]\.tool_calls must be a list",
        ),
        (
            {
                "messages": [
                    {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [{"function": {"name": "f", "arguments": None}}, "not-a-call"],
                    }
                ]
            },
            openai.BadRequestError,
            "chat template failed",
        ),
    ],
)
def test_bad_requests_get_clear_errors(client, toy_model_dir, kwargs, error, message):
    request = {"model": toy_model_dir.name, "messages": USER, "max_tokens": 2} | kwargs
    with pytest.raises(error, match=message):
        client.chat.completions.create(**request)


def test_stream_with_thinking_splits_reasoning_like_non_stream(client, toy_model_dir):
    kwargs = dict(model=toy_model_dir.name, messages=USER, max_tokens=24, temperature=0.9, seed=3)
    whole = client.chat.completions.create(**kwargs).choices[0].message
    chunks = list(client.chat.completions.create(stream=True, **kwargs))
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    reasoning = "".join((d.model_extra or {}).get("reasoning_content") or "" for d in deltas)
    assert reasoning == whole.model_extra["reasoning_content"]
    assert "".join(d.content or "" for d in deltas) == whole.content
    assert reasoning or whole.content  # something was said, so the comparison means something


def test_busy_port_is_one_clear_error(tmp_path):
    import socket

    from catalog.errors import DraftsetError
    from pipeline.servers.devserver import serve_in_thread

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(DraftsetError, match="cannot listen on 127.0.0.1") as info:
            serve_in_thread(tmp_path / "never-loaded", port=busy.getsockname()[1])
    assert "--port" in info.value.hint
