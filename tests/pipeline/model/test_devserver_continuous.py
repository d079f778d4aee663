"""serve-dev --batching continuous: transformers' continuous batching behind the real HTTP server and openai client.

Greedy answers must be the existing paths' token for token (one at a time, and static batches), each request
ends at its own end-of-turn or budget with the right finish_reason and usage, and what the manager cannot do
(per-request seeds, streaming, grammars) still goes where it went before.
"""

from __future__ import annotations

import pytest

from catalog.errors import DraftsetError
from pipeline.servers.devserver.engine import Engine, SamplingParams
from tests.kits.devserver_ask import NO_THINKING, ask_all

# Prompts of different lengths, each with its own budget (1 token up to past the toy's 4-step answers).
PROMPTS = [
    "Hi.",
    "Why is the sky blue? Answer in one short paragraph, please, for a child of about seven.",
    "A haiku on autumn.",
    "Explain deduplication of a training corpus in one line: exact hashes, near-duplicates, and why both.",
    "Count to five.",
]
BUDGETS = [1, 17, 5, 12, 3]


def _serve(model_dir, **options):
    from pipeline.servers.devserver import serve_in_thread
    from pipeline.servers.devserver.server import EngineOptions

    return serve_in_thread(model_dir, options=EngineOptions(**options), timeout_s=300)


@pytest.fixture(scope="module")
def continuous(toy_model_dir):
    running = _serve(toy_model_dir, max_batch=4, batching="continuous")
    yield running
    running.stop()
    assert not running.server.config.app.state.continuous.manager.is_running()  # stopped with the server


@pytest.fixture(scope="module")
def serial(toy_model_dir):
    return Engine(toy_model_dir)


def _check_against_serial(serial: Engine, prompts: list[str], budgets: list[int], replies: list) -> list[str]:
    """Each reply is what one-at-a-time greedy generation answers; returns the finish reasons."""
    finishes = []
    for prompt, budget, reply in zip(prompts, budgets, replies):
        ids = serial.render([{"role": "user", "content": prompt}], None, False)
        want = serial.generate(ids, SamplingParams(budget, 0.0, 1.0, None), on_token=lambda t: None)
        choice = reply.choices[0]
        assert choice.model_extra["token_ids"] == want.completion_ids, prompt
        stopped = want.completion_ids[-1] == serial.eos_id
        assert choice.finish_reason == want.finish_reason == ("stop" if stopped else "length")
        assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (len(ids), len(want.completion_ids))
        assert reply.model_extra["prompt_token_ids"] == ids
        finishes.append(choice.finish_reason)
    return finishes


def test_greedy_answers_equal_one_at_a_time_and_static_batches(toy_model_dir, continuous, serial):
    # 5 requests on 4 slots: the fifth joins the running batch when the first (1 token) has ended
    replies = ask_all(continuous.url, PROMPTS, BUDGETS)
    _check_against_serial(serial, PROMPTS, BUDGETS, replies)
    state = continuous.server.config.app.state
    assert state.continuous.answered >= len(PROMPTS) and state.batcher.batches == 0  # none took the static path

    static = _serve(toy_model_dir, max_batch=4)
    try:
        by_static = ask_all(static.url, PROMPTS, BUDGETS)
    finally:
        static.stop()
    assert [r.choices[0].model_extra["token_ids"] for r in replies] == [
        r.choices[0].model_extra["token_ids"] for r in by_static
    ]


def test_sampled_and_streamed_requests_take_the_paths_that_honour_them(continuous, serial):
    import openai

    client = openai.OpenAI(base_url=continuous.url, api_key="unused", max_retries=0, timeout=120)
    state = continuous.server.config.app.state
    answered, batches = state.continuous.answered, state.batcher.batches
    model = client.models.list().data[0].id
    ids = serial.render([{"role": "user", "content": "Count to five."}], None, False)

    sampled = client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "Count to five."}],
        max_tokens=6,
        temperature=1.0,
        seed=7,
        extra_body={"return_token_ids": True, **NO_THINKING},
    )
    want = serial.generate(ids, SamplingParams(6, 1.0, 1.0, 7), on_token=lambda t: None).completion_ids
    assert sampled.choices[0].model_extra["token_ids"] == want  # the request's own seed, honoured
    assert (state.continuous.answered, state.batcher.batches) == (answered, batches + 1)

    stream = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Count to five."}], max_tokens=4, temperature=0, stream=True
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    greedy = serial.generate(ids, SamplingParams(4, 0.0, 1.0, None), on_token=lambda t: None).completion_ids
    assert text == serial.tokenizer.decode(greedy, skip_special_tokens=True)
    assert state.continuous.answered == answered  # streamed: the serial path


def test_the_manager_has_its_own_config_over_the_same_weights(continuous):
    state = continuous.server.config.app.state
    engine, manager_model = state.continuous.engine, state.continuous.model
    # transformers 5.17 switches its model to `paged|sdpa`, which refuses the serial path's plain `generate`
    assert manager_model.config is not engine.model.config
    assert engine.model.config._attn_implementation == "sdpa"
    shared = {p.data_ptr() for p in engine.model.parameters()}
    assert {p.data_ptr() for p in manager_model.parameters()} == shared  # no second copy of the weights
    line = state.continuous.describe()  # serve-dev's startup line says what falls back, and why
    assert "sampled ones take the static batcher (the manager has one seed, not one a request)" in line


def test_continuous_batching_is_refused_where_it_cannot_run(toy_model_dir):
    with pytest.raises(DraftsetError, match="--batching continuous needs --max-batch N > 1"):
        Engine(toy_model_dir, batching="continuous")
    with pytest.raises(DraftsetError, match="--batching 'paged': static or continuous"):
        Engine(toy_model_dir, max_batch=4, batching="paged")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_smollm2_greedy_answers_end_at_their_own_stop_or_budget(tmp_path_factory, smollm2_gguf):
    """A real target: answers of different lengths, some ending on <|im_end|> before their budget, some cut."""
    from pipeline.targets.gguf_import import import_gguf

    out = tmp_path_factory.mktemp("smollm2-continuous") / "smollm2"
    import_gguf(smollm2_gguf, out, dtype="float32")
    prompts = ["Say hi.", "What is 2+2? Answer with a number.", "Write a long story about a dragon.", "Name a colour."]
    budgets = [8, 24, 32, 1]
    running = _serve(out, max_batch=3, batching="continuous")
    try:
        replies = ask_all(running.url, prompts, budgets)
    finally:
        running.stop()
    finishes = _check_against_serial(Engine(out), prompts, budgets, replies)
    assert "stop" in finishes and "length" in finishes, finishes
