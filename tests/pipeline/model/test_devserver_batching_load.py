"""Issue #29: under load, concurrent requests form large batches, and a batched answer reads as a streamed one.

A fake `generate_batch` that costs a fixed time a step whatever the batch (as a GPU's does) stands in for the
model; the requests go through the real HTTP server and openai client, so request parsing, rendering and
answering all run where they run in production.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from pipeline.servers.devserver.batch_stats import BatchLog, BatchStat, summary
from pipeline.servers.devserver.engine import Detokenizer, Engine, Generation

STEP_S = 0.01  # per decoding step, any batch size (a batch of 32 steps: 320 ms, long beside a loaded CPU's jitter)


def _slow_batch(engine: Engine, prompts: list[list[int]], budgets: list[int], params) -> list[Generation]:
    time.sleep(STEP_S * max(budgets))  # a GPU: the time follows the steps, not the rows
    words = engine.tokenizer("tokens for the answer", add_special_tokens=False)["input_ids"]
    return [Generation((words * budget)[:budget], "length") for budget in budgets]


def test_concurrent_requests_form_large_batches(toy_model_dir, monkeypatch):
    import openai

    from pipeline.servers.devserver import serve_in_thread
    from pipeline.servers.devserver.server import EngineOptions

    monkeypatch.setattr(Engine, "generate_batch", _slow_batch)
    running = serve_in_thread(toy_model_dir, options=EngineOptions(max_batch=64))
    try:
        log: BatchLog = running.server.config.app.state.batcher.log

        async def rounds() -> list:
            client = openai.AsyncOpenAI(base_url=running.url, api_key="unused", max_retries=0, timeout=60)
            model = (await client.models.list()).data[0].id

            async def ask(i: int) -> str:
                reply = await client.chat.completions.create(
                    model=model, messages=[{"role": "user", "content": f"question {i}"}], max_tokens=32, temperature=0
                )
                return reply.choices[0].message.content or ""

            # 64 clients, each asking three times in a row: later rounds arrive while a batch runs
            async def client_loop(c: int) -> list[str]:
                return [await ask(c * 10 + r) for r in range(3)]

            return await asyncio.gather(*(client_loop(c) for c in range(64)))

        answers = asyncio.run(rounds())
    finally:
        running.stop()
    assert all(len(a) == 3 and all(a) for a in answers)  # every request answered with text
    sizes = [s.size for s in log.history()]
    assert sum(sizes) == 64 * 3
    assert sum(sizes) / len(sizes) >= 32, sizes  # the old 20 ms / 2 ms window gave batches of a few
    assert max(sizes) <= 64


@pytest.fixture(scope="module")
def engine(toy_model_dir):
    return Engine(toy_model_dir)


@pytest.mark.parametrize("thinking", [True, False])
def test_a_whole_completion_decodes_as_its_tokens_one_by_one(engine, thinking):
    tok = engine.tokenizer
    plain = tok("answer ü and é, then more", add_special_tokens=False)["input_ids"]
    cases = [
        [engine.think_start_id, *tok("plan é", add_special_tokens=False)["input_ids"], engine.think_end_id, *plain],
        [*plain, engine.eos_id],
        plain[:-1],  # cut by max_tokens
        [engine.think_start_id, *tok("still thinking ü", add_special_tokens=False)["input_ids"]],
        [],
    ]
    ü = tok("ü", add_special_tokens=False)["input_ids"]
    if len(ü) > 1:  # a byte-level tokenizer splits it: cut inside the character
        cases.append([*plain, ü[0]])
    for ids in cases:
        one_by_one, whole = Detokenizer(engine, thinking), Detokenizer(engine, thinking)
        for token in ids:
            one_by_one.push(token)
        whole.feed(ids)
        assert whole.text == one_by_one.text, ids
        assert whole.content_ids == one_by_one.content_ids
        assert whole.raw_content() == one_by_one.raw_content()


def test_the_batch_log_counts_and_summarises(caplog):
    log = BatchLog(every=2)
    with caplog.at_level("INFO", logger="draftset.devserver.batching"):
        log.add(BatchStat(size=10, wait_s=0.5, gather_s=0.1, run_s=1.0, tokens=100))
        log.add(BatchStat(size=30, wait_s=0.1, gather_s=0.1, run_s=1.0, tokens=300))
        log.add(BatchStat(size=5, wait_s=0.0, gather_s=0.0, run_s=0.5, tokens=5))
    assert (log.batches, log.largest) == (3, 30)
    lines = [r.getMessage() for r in caplog.records if r.levelname == "INFO"]
    assert lines == [
        "batches 1-2: 40 requests, size mean 20.0 median 20 max 30, wait mean 0.300 s (gathering 0.100 s), "
        "run 2.00 s, 200 tokens/s while running"
    ]
    assert summary(log.history()[2:], first=3).startswith("batches 3-3: 5 requests")
