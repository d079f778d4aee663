"""A minimal OpenAI-compatible chat server for regeneration tests and benchmarks.

Two roles: an *instant-reply* server (the client benchmark: the server must never be the bottleneck)
and a *faulty* one (500s and stalls, deterministic per request so tests can assert outcomes).
It is a test double of the target server, not a model: replies are derived from the request text.

    python -m eval.bench.fake_openai --port 8123 [--fail-first 1] [--stall-first 1 --stall-s 5]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import time
from collections import Counter
from dataclasses import dataclass, field

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from pipeline.servers.localhub.server import start_in_thread

MODEL_ID = "fake/instant-target"


@dataclass
class Behaviour:
    """What the server does with each request; every fault is keyed on the request body."""

    reply_words: int = 8
    latency_s: float = 0.0
    fail_first: int = 0  # each distinct request gets this many 500s before it succeeds
    fail_marker: str | None = None  # a last user message containing this always gets 500
    stall_first: int = 0  # each distinct request stalls this many times before it answers
    stall_s: float = 30.0
    length_marker: str | None = None  # a last user message containing this ends with finish_reason=length
    garbage_marker: str | None = None  # ... gets HTTP 200 with a body that is not a chat completion
    huge_marker: str | None = None  # ... gets `huge_chars` of text with finish_reason=stop (max_tokens ignored)
    huge_chars: int = 1_000_000
    rate_limit_first: int = 0  # each distinct request gets this many 429s first, with these headers
    rate_limit_headers: dict[str, str] = field(default_factory=lambda: {"Retry-After": "1"})
    times: list[float] = field(default_factory=list)  # monotonic arrival time of every chat request
    keep_log: bool = True  # keep every request body (tests read it back)
    log: list[dict] = field(default_factory=list)
    seen: Counter = field(default_factory=Counter)


def _last_user(messages: list[dict]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return str(message.get("content") or "")
    return ""


def reply_text(messages: list[dict], words: int) -> str:
    """Deterministic reply: a short digest of the whole context, so each turn's answer differs."""
    digest = hashlib.sha1(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:8]
    return " ".join([f"answer-{digest}"] + ["tok"] * (words - 1))


def build_app(behaviour: Behaviour) -> Starlette:
    async def models(_: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": MODEL_ID, "object": "model", "owned_by": "draftset"}]})

    async def chat(request: Request) -> Response:
        body = await request.json()
        if behaviour.keep_log:
            behaviour.log.append(body)
        messages = body.get("messages") or []
        last = _last_user(messages)
        key = hashlib.sha1(json.dumps(messages, sort_keys=True).encode()).hexdigest()
        behaviour.times.append(time.monotonic())
        if behaviour.fail_first or behaviour.stall_first or behaviour.rate_limit_first:  # per-request memory
            behaviour.seen[key] += 1
        attempt = behaviour.seen[key] or 1
        if attempt <= behaviour.rate_limit_first:
            return JSONResponse(
                {"error": {"message": "rate limited", "code": 429}},
                status_code=429,
                headers=behaviour.rate_limit_headers,
            )
        attempt -= behaviour.rate_limit_first
        if behaviour.fail_marker and behaviour.fail_marker in last or attempt <= behaviour.fail_first:
            return JSONResponse({"error": {"message": "injected failure", "code": 500}}, status_code=500)
        if attempt <= behaviour.fail_first + behaviour.stall_first:
            await asyncio.sleep(behaviour.stall_s)
        if behaviour.latency_s:
            await asyncio.sleep(behaviour.latency_s)
        if behaviour.garbage_marker and behaviour.garbage_marker in last:
            return JSONResponse({"detail": "an HTML error page would look like this to a JSON client"})
        truncated = bool(behaviour.length_marker and behaviour.length_marker in last)
        text = reply_text(messages, behaviour.reply_words)
        if behaviour.huge_marker and behaviour.huge_marker in last:
            text = "x" * behaviour.huge_chars
        kwargs = body.get("chat_template_kwargs") or {}
        message = {"role": "assistant", "content": text}
        if kwargs.get("enable_thinking"):
            message["reasoning_content"] = f"thinking about {key[:6]}"
        prompt_tokens = sum(len(str(m.get("content") or "").split()) for m in messages)
        completion = min(behaviour.reply_words, int(body.get("max_tokens") or 10**9))
        return JSONResponse(
            {
                "id": f"chatcmpl-{key[:12]}-{attempt}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", MODEL_ID),
                "choices": [{"index": 0, "message": message, "finish_reason": "length" if truncated else "stop"}],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion,
                    "total_tokens": prompt_tokens + completion,
                },
            }
        )

    async def request_log(_: Request) -> Response:
        return JSONResponse(behaviour.log)

    return Starlette(
        routes=[
            Route("/v1/models", models),
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/_log", request_log),
        ]
    )


class RunningServer:
    """A server on a background thread; `.url` is the base URL (no /v1), `.stop()` shuts it down."""

    def __init__(self, behaviour: Behaviour, host: str = "127.0.0.1", port: int = 0):
        config = uvicorn.Config(build_app(behaviour), log_level="warning", access_log=False, lifespan="off")
        self.behaviour = behaviour
        self._running = start_in_thread(lambda: uvicorn.Server(config), host, port, name="the fake OpenAI server")
        self.url = self._running.url

    def stop(self) -> None:
        self._running.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8123)
    parser.add_argument("--reply-words", type=int, default=8)
    parser.add_argument("--latency-s", type=float, default=0.0)
    parser.add_argument("--fail-first", type=int, default=0)
    parser.add_argument("--stall-first", type=int, default=0)
    parser.add_argument("--stall-s", type=float, default=30.0)
    args = parser.parse_args()
    behaviour = Behaviour(
        reply_words=args.reply_words,
        latency_s=args.latency_s,
        fail_first=args.fail_first,
        stall_first=args.stall_first,
        stall_s=args.stall_s,
        keep_log=False,
    )
    uvicorn.run(
        build_app(behaviour), host=args.host, port=args.port, log_level="warning", access_log=False, lifespan="off"
    )


if __name__ == "__main__":
    main()
