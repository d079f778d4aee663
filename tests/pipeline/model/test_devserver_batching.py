"""The dev server's batched mode: concurrent plain requests share one `generate`, and each gets its own answer."""

from __future__ import annotations

import asyncio

import pytest

from pipeline.servers.devserver.engine import Engine, SamplingParams
from tests.kits.devserver_ask import ask_all


@pytest.fixture(scope="module")
def serial(toy_model_dir):
    return Engine(toy_model_dir)


@pytest.fixture(scope="module")
def batched(toy_model_dir):
    from pipeline.servers.devserver import serve_in_thread
    from pipeline.servers.devserver.server import EngineOptions

    running = serve_in_thread(toy_model_dir, options=EngineOptions(max_batch=8))
    yield running
    running.stop()


PROMPTS = [
    "Tell me about tokenizers.",
    "Why is the sky blue?",
    "A haiku on autumn, please.",
    "Explain dedup in one line.",
    "Count to five.",
    "What is a draft model?",
]


def _greedy(engine: Engine, prompt: str, max_tokens: int) -> list[int]:
    ids = engine.render([{"role": "user", "content": prompt}], None, False)
    return engine.generate(ids, SamplingParams(max_tokens, 0.0, 1.0, None), on_token=lambda t: None).completion_ids


def test_concurrent_greedy_requests_get_what_one_at_a_time_would(serial, batched):
    budgets = [6, 12, 3, 12, 9, 1]  # each row is cut at its own max_tokens, not the batch's largest

    replies = ask_all(batched.url, PROMPTS, budgets, timeout=60)
    for prompt, budget, reply in zip(PROMPTS, budgets, replies):
        choice = reply.choices[0]
        want = _greedy(serial, prompt, budget)
        assert choice.model_extra["token_ids"] == want, prompt
        assert len(want) <= budget
        assert choice.finish_reason == ("stop" if want[-1] == serial.eos_id else "length")
        assert reply.usage.completion_tokens == len(want)


def test_requests_that_arrive_together_share_a_batch(toy_model_dir):
    from pipeline.servers.devserver.batching import Batcher

    engine = Engine(toy_model_dir, max_batch=4)
    batcher = Batcher(engine, max_batch=4)
    prompt = engine.render([{"role": "user", "content": "hello"}], None, False)
    greedy = SamplingParams(4, 0.0, 1.0, None)

    async def ten() -> list:
        return await asyncio.gather(*(batcher.submit(prompt, greedy) for _ in range(10)))

    results = asyncio.run(ten())
    assert len({tuple(r.completion_ids) for r in results}) == 1  # the same prompt, greedy: one answer
    assert batcher.largest == 4 and batcher.batches == 3  # 4 + 4 + 2, never one request per batch


def test_a_failing_batch_answers_every_request_with_the_error(toy_model_dir):
    from pipeline.servers.devserver.batching import Batcher

    engine = Engine(toy_model_dir, max_batch=2)
    batcher = Batcher(engine, max_batch=2)

    def broken(*args, **kwargs):
        raise RuntimeError("out of memory (planted)")

    engine.generate_batch = broken  # type: ignore[method-assign]

    async def two() -> list:
        prompt = engine.render([{"role": "user", "content": "hi"}], None, False)
        return await asyncio.gather(
            *(batcher.submit(prompt, SamplingParams(2, 0.0, 1.0, None)) for _ in range(2)), return_exceptions=True
        )

    results = asyncio.run(two())
    assert [str(r) for r in results] == ["out of memory (planted)"] * 2


def test_engine_refuses_an_unknown_dtype(toy_model_dir):
    from catalog.errors import DraftsetError

    with pytest.raises(DraftsetError, match="float32 or bfloat16"):
        Engine(toy_model_dir, dtype="float8")


def test_a_batch_missing_an_answer_fails_every_request_instead_of_leaving_one_waiting(toy_model_dir):
    from pipeline.servers.devserver.batching import Batcher

    engine = Engine(toy_model_dir, max_batch=2)
    batcher = Batcher(engine, max_batch=2)
    real = engine.generate_batch
    engine.generate_batch = lambda prompts, budgets, params: real(prompts, budgets, params)[:-1]  # type: ignore[method-assign]

    async def two() -> list:
        prompt = engine.render([{"role": "user", "content": "hi"}], None, False)
        return await asyncio.wait_for(
            asyncio.gather(
                *(batcher.submit(prompt, SamplingParams(2, 0.0, 1.0, None)) for _ in range(2)), return_exceptions=True
            ),
            timeout=30,
        )

    results = asyncio.run(two())
    assert all(isinstance(r, RuntimeError) and "answers for" in str(r) for r in results), results


def test_a_static_kv_cache_answers_with_the_same_tokens_over_http(serial, toy_model_dir):
    """`serve-dev --kv-cache static`: the batch's cache is allocated once and written in place, and every request
    still gets exactly what one at a time gives (left padding, own budgets, end-of-turn cuts)."""
    from pipeline.servers.devserver import serve_in_thread
    from pipeline.servers.devserver.engine import KvCache
    from pipeline.servers.devserver.server import EngineOptions

    running = serve_in_thread(toy_model_dir, options=EngineOptions(max_batch=8, kv_cache=KvCache.static))
    try:
        budgets = [6, 12, 3, 12, 9, 1]
        replies = ask_all(running.url, PROMPTS, budgets, timeout=60)
    finally:
        running.stop()
    for prompt, budget, reply in zip(PROMPTS, budgets, replies):
        assert reply.choices[0].model_extra["token_ids"] == _greedy(serial, prompt, budget), prompt


def test_engine_refuses_an_unknown_kv_cache(toy_model_dir):
    from catalog.errors import DraftsetError

    with pytest.raises(DraftsetError, match="--kv-cache 'paged': dynamic or static"):
        Engine(toy_model_dir, kv_cache="paged")
    for where in ({"max_batch": 1}, {"max_batch": 8, "batching": "continuous"}):  # where it would change nothing
        with pytest.raises(DraftsetError, match="applies to static batching"):
            Engine(toy_model_dir, kv_cache="static", **where)


def test_a_static_kv_batch_pads_to_its_bucket_and_answers_only_the_real_rows(serial, toy_model_dir):
    """Three prompts on --max-batch 8 go to `generate` as 4 rows (buckets of 8 / 4) of a width that is a multiple of
    64; the padding row's answer is dropped and the three are what one at a time gives."""
    from pipeline.servers.devserver.engine import STATIC_WIDTH_STEP, KvCache

    engine = Engine(toy_model_dir, max_batch=8, kv_cache=KvCache.static)
    shapes = []
    generate = engine.model.generate

    def spy(input_ids, **kw):
        shapes.append(tuple(input_ids.shape))
        return generate(input_ids, **kw)

    engine.model.generate = spy
    prompts = [serial.render([{"role": "user", "content": p}], None, False) for p in PROMPTS[:3]]
    budgets = [5, 9, 2]
    answers = engine.generate_batch(prompts, budgets, SamplingParams(None, 0.0, 1.0, None))
    assert len(shapes) == 1 and shapes[0][0] == 4 and shapes[0][1] % STATIC_WIDTH_STEP == 0
    assert len(answers) == 3
    for prompt, budget, answer in zip(PROMPTS[:3], budgets, answers, strict=True):
        assert answer.completion_ids == _greedy(serial, prompt, budget), prompt
