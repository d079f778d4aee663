"""Issue #29: the client sends each request on its least-loaded lane, so one held connection never queues
another request unsent while a connection elsewhere is free (round-robin did, against a batching server)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from pipeline.regenerate.client import EndpointPool
from pipeline.regenerate.config import RetryPolicy


@pytest.fixture()
def holding_server():
    """Answers at once, except a request whose first message says "hold": that one waits for `release`."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from pipeline.servers.http import LOOPBACK, start_in_thread

    release = threading.Event()

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        while body["messages"][0]["content"] == "hold" and not release.is_set():
            await asyncio.sleep(0.01)
        message = {"role": "assistant", "content": "ok"}
        return JSONResponse({"model": "m", "choices": [{"message": message, "finish_reason": "stop"}]})

    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    running = start_in_thread(
        lambda: uvicorn.Server(uvicorn.Config(app, host=LOOPBACK, port=0, log_level="warning")),
        LOOPBACK,
        0,
        name="holding server",
    )
    yield running.url, release
    release.set()
    running.stop()


def test_a_held_connection_does_not_queue_the_next_request(holding_server):
    url, release = holding_server

    async def scenario() -> list[str]:
        # two lanes of one connection each: the held request takes one lane for as long as it is held
        pool = EndpointPool([url], api_key="x", retry=RetryPolicy(), max_inflight=2, connections_per_lane=1)
        say = lambda text: [{"role": "user", "content": text}]  # noqa: E731
        held = asyncio.create_task(pool.chat(say("hold"), {"model": "m"}))
        await asyncio.sleep(0.2)
        order = []
        for i in range(3):  # round-robin would put the 2nd of these behind the held one
            reply = await asyncio.wait_for(pool.chat(say(f"quick {i}"), {"model": "m"}), 5)
            order.append(reply.content)
        assert not held.done()
        release.set()
        order.append((await held).content)
        assert pool.endpoints[0].lane_load == [0, 0]  # every lane given back
        await pool.aclose()
        return order

    assert asyncio.run(scenario()) == ["ok"] * 4


def test_take_lane_picks_the_least_loaded():
    pool = EndpointPool(
        ["http://127.0.0.1:9"], api_key="x", retry=RetryPolicy(), max_inflight=6, connections_per_lane=2
    )
    endpoint = pool.endpoints[0]
    assert [endpoint.take_lane() for _ in range(4)] == [0, 1, 2, 0]
    endpoint.release_lane(1)
    assert endpoint.take_lane() == 1
    assert endpoint.lane_load == [2, 1, 1]
    asyncio.run(pool.aclose())
