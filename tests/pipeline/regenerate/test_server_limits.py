"""Regeneration respects what the server and the config say: it waits what Retry-After / RateLimit headers
ask (real loopback HTTP), and an answer longer than max_tokens allows is dropped with a reason."""

from __future__ import annotations

import asyncio
import json

import pytest
from regen_helpers import simple_mix, write_mix

from catalog.db import Catalog
from pipeline.regenerate.client import EndpointPool, Reply, over_max_tokens, server_wait_s
from pipeline.regenerate.config import RegenConfig, RetryPolicy
from pipeline.regenerate.run import regen_dir, run_regenerate


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"Retry-After": "3"}, 3.0),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"x-ratelimit-reset-requests": "6m0s", "x-ratelimit-reset-tokens": "20ms"}, 360.0),
        ({"RateLimit-Reset": "2"}, 2.0),
        ({"Retry-After": "soon"}, None),
        ({}, None),
    ],
)
def test_server_wait_reads_every_header_form(headers, seconds):
    import httpx

    assert server_wait_s(httpx.Headers(headers)) == seconds


def test_retry_after_is_honoured_not_the_shorter_backoff(fake_server):
    server = fake_server(rate_limit_first=1, rate_limit_headers={"Retry-After": "2"})
    pool = EndpointPool(
        [server.url], api_key="x", retry=RetryPolicy(backoff_s=0.01, max_attempts=3, timeout_s=5), max_inflight=1
    )

    async def go() -> Reply:
        try:
            return await pool.chat([{"role": "user", "content": "hi"}], {"model": "fake", "max_tokens": 8})
        finally:
            await pool.aclose()

    reply = asyncio.run(go())
    assert reply.attempts == 2
    first, second = server.behaviour.times
    assert second - first >= 2.0  # the backoff alone would have retried after ~0.01 s


def test_retry_after_is_bounded_by_the_config(fake_server):
    server = fake_server(rate_limit_first=1, rate_limit_headers={"Retry-After": "86400"})
    pool = EndpointPool(
        [server.url],
        api_key="x",
        retry=RetryPolicy(backoff_s=0.01, max_attempts=3, timeout_s=5, retry_after_max_s=0.5),
        max_inflight=1,
    )

    async def go() -> Reply:
        try:
            return await pool.chat([{"role": "user", "content": "hi"}], {"model": "fake", "max_tokens": 8})
        finally:
            await pool.aclose()

    assert asyncio.run(go()).attempts == 2
    first, second = server.behaviour.times
    assert 0.5 <= second - first < 5


def _reply(content: str, **usage: int) -> Reply:
    return Reply(content, None, "stop", usage, "m", "e", 1, 0.1)


def test_over_max_tokens_by_usage_characters_and_tokenizer():
    assert "usage says 11" in over_max_tokens(_reply("x", completion_tokens=11), 10)
    assert "characters" in over_max_tokens(_reply("x" * 321), 10)
    assert over_max_tokens(_reply("x" * 320), 10) is None
    assert "tokenizer" in over_max_tokens(_reply("a " * 100), 10, count_tokens=lambda t: len(t.split()))
    assert over_max_tokens(_reply("a " * 20), 10, count_tokens=lambda t: len(t.split())) is None


def test_a_server_ignoring_max_tokens_gets_its_answers_dropped_with_a_reason(home, fake_server):
    server = fake_server(huge_marker="HUGE", huge_chars=2_000_000)
    convs = simple_mix(6, marker_rows={1: " HUGE", 4: " HUGE"})
    write_mix(home, "m", convs)
    config = RegenConfig.model_validate(
        {
            "mix": "m",
            "endpoints": [server.url],
            "retry": {"backoff_s": 0.01, "max_attempts": 2, "timeout_s": 10.0},
            "partitions": [{"name": "all", "max_prompt": None, "concurrency": 2, "max_tokens": 64}],
        }
    )
    result = run_regenerate(config, home, Catalog(home), show_progress=False)
    skipped = [json.loads(x) for x in (regen_dir(home, "m") / "skipped.jsonl").read_text().splitlines()]
    assert {s["id"] for s in skipped} == {convs[1].id, convs[4].id}
    assert all(
        s["reason"] == "over_max_tokens" and "characters, more than max_tokens 64" in s["detail"] for s in skipped
    )
    assert result.counts["dropped_over_max_tokens"] == 2
