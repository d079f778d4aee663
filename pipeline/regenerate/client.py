"""Async chat client over several OpenAI-compatible endpoints: least-inflight dispatch, own retries.

Why "lanes": httpcore scans its whole connection pool on every request, so one client with 150
connections spends more CPU on pool bookkeeping than on HTTP (measured in eval/bench/bench_regen.py).
Each endpoint therefore gets several `AsyncOpenAI` clients of `connections_per_lane` connections.
The openai client's own retries are off (max_retries=0): we retry here, on any endpoint.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import random
import time
from dataclasses import dataclass, field
from typing import Any

import httpx2
import openai

from catalog.errors import DraftsetError
from pipeline.regenerate.config import RetryPolicy

RETRYABLE_STATUS = {408, 409, 425, 429}
START_HINT = (
    "start one: `draftset serve-dev DIR --port N` (toy target) or on a GPU host "
    "`python -m sglang.launch_server --model-path <target> --port N --reasoning-parser <parser>` "
    "(the reasoning parser makes SGLang return reasoning_content)"
)


def base_url(url: str) -> str:
    """Accept `http://host:port` or `http://host:port/v1`; the openai client wants the /v1 base."""
    url = url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


@dataclass
class Reply:
    content: str
    reasoning: str | None
    finish_reason: str | None
    usage: dict[str, Any]
    model: str
    endpoint: str
    attempts: int
    latency_s: float
    tool_calls: list[dict[str, Any]] | None = None  # the target's own calls, OpenAI-shaped


class RequestFailed(Exception):
    """A request that failed for good: not retryable, or out of attempts."""

    def __init__(self, reason: str, attempts: int, last_status: int | str | None):
        super().__init__(reason)
        self.reason, self.attempts, self.last_status = reason, attempts, last_status


@dataclass
class Endpoint:
    url: str
    lanes: list[openai.AsyncOpenAI]
    inflight: int = 0
    requests: int = 0
    failures: int = 0
    _next_lane: itertools.cycle = field(init=False)

    def __post_init__(self) -> None:
        self._next_lane = itertools.cycle(self.lanes)

    def lane(self) -> openai.AsyncOpenAI:
        return next(self._next_lane)


def _classify(exc: Exception) -> tuple[str, int | str, bool]:
    """(reason, status, retryable) for one failed attempt."""
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        return f"HTTP {status}: {str(exc.message)[:200]}", status, status in RETRYABLE_STATUS or status >= 500
    if isinstance(exc, openai.APITimeoutError):
        return "request timed out", "timeout", True
    if isinstance(exc, openai.APIConnectionError):
        return f"connection error: {exc}", "connection", True
    if isinstance(exc, ValueError):  # BadResponse or invalid JSON: often a transient proxy hiccup
        return f"bad response: {exc}", "bad_response", True
    return f"{type(exc).__name__}: {exc}", "error", False


class EndpointPool:
    """Dispatch each request to the endpoint with the fewest requests in flight (ties: round-robin)."""

    def __init__(
        self, urls: list[str], *, api_key: str, retry: RetryPolicy, max_inflight: int, connections_per_lane: int = 8
    ):
        n_lanes = max(1, math.ceil(max_inflight / connections_per_lane))
        limits = httpx2.Limits(max_connections=connections_per_lane, max_keepalive_connections=connections_per_lane)
        tls = httpx2.create_ssl_context()  # loading CA certificates costs ~0.1 s: once, not once per lane

        def lane(url: str) -> openai.AsyncOpenAI:
            http = openai.DefaultAsyncHttpxClient(limits=limits, verify=tls)
            return openai.AsyncOpenAI(
                base_url=base_url(url), api_key=api_key, max_retries=0, timeout=retry.timeout_s, http_client=http
            )

        self.retry = retry
        self.endpoints = [Endpoint(url, [lane(url) for _ in range(n_lanes)]) for url in urls]
        self._tiebreak = itertools.count()

    async def check(self, model: str | None) -> str:
        """GET /v1/models on every endpoint before any work starts; returns the model to ask for
        (`model`, or the first one the first endpoint serves)."""
        for endpoint in self.endpoints:
            try:
                page = await endpoint.lanes[0].models.list(timeout=10.0)
            except openai.OpenAIError as exc:
                raise DraftsetError(
                    f"target endpoint {endpoint.url} is not answering GET /v1/models: {_classify(exc)[0]}",
                    hint=START_HINT,
                ) from exc
            served = [m.id for m in page.data]
            if not served:
                raise DraftsetError(f"target endpoint {endpoint.url} serves no model", hint=START_HINT)
            model = model or served[0]
            if model not in served:
                raise DraftsetError(
                    f"target endpoint {endpoint.url} serves {served}, not {model!r}",
                    hint="pass --model with one of those names, or --endpoint of the right server",
                )
        assert model is not None  # RegenConfig.endpoints has min_length=1: the loop ran and chose one
        return model

    def _pick(self) -> Endpoint:
        # Rotating the start index makes equal-load endpoints share the work round-robin.
        start = next(self._tiebreak) % len(self.endpoints)
        order = self.endpoints[start:] + self.endpoints[:start]
        return min(order, key=lambda e: e.inflight)

    async def chat(self, messages: list[dict[str, Any]], params: dict[str, Any]) -> Reply:
        """POST /v1/chat/completions with body `params` + messages, retrying with backoff on any
        endpoint; raises RequestFailed when it fails for good.

        Why `post(..., cast_to=bytes)` and not `chat.completions.create`: the typed path spends ~0.5 ms
        of CPU per request transforming TypedDict params and building response models (measured in
        eval/bench/bench_regen.py), which would make the client the bottleneck at ~700 req/s per core.
        The openai client still does transport, auth headers, timeouts and HTTP error mapping."""
        body = {"messages": messages, **{k: v for k, v in params.items() if v is not None}}
        for attempt in itertools.count(1):
            endpoint = self._pick()
            endpoint.inflight += 1
            started = time.monotonic()
            try:
                raw = await endpoint.lane().post("/chat/completions", body=body, cast_to=bytes)
                return _reply(json.loads(raw), endpoint.url, attempt, time.monotonic() - started)
            except Exception as exc:  # classified below; anything unknown is not retried
                endpoint.failures += 1
                reason, status, retryable = _classify(exc)
                if not retryable or attempt >= self.retry.max_attempts:
                    raise RequestFailed(f"{reason} (endpoint {endpoint.url})", attempt, status) from exc
            finally:
                endpoint.inflight -= 1
                endpoint.requests += 1
            delay = min(self.retry.backoff_max_s, self.retry.backoff_s * 2 ** (attempt - 1))
            await asyncio.sleep(delay * (0.5 + random.random() / 2))  # jitter: no synchronized retry storms
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        for endpoint in self.endpoints:
            for lane in endpoint.lanes:
                await lane.close()


class BadResponse(ValueError):
    """A 200 answer whose body is not a chat completion (a proxy's error page, a truncated body)."""


def _reply(data: Any, endpoint: str, attempts: int, latency: float) -> Reply:
    try:
        choice = data["choices"][0]
        message = choice["message"]
        usage = data.get("usage") or {}
        content = message.get("content") or ""
        # SGLang returns `reasoning_content` with --reasoning-parser; newer vLLM says `reasoning`.
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        calls = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["function"]["name"], "arguments": c["function"].get("arguments") or "{}"},
            }
            for c in message.get("tool_calls") or []
        ]
        return Reply(
            content=content,
            reasoning=reasoning,
            finish_reason=choice.get("finish_reason"),
            usage=usage,
            model=str(data.get("model")),
            endpoint=endpoint,
            attempts=attempts,
            latency_s=latency,
            tool_calls=calls or None,
        )
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise BadResponse(f"response is not a chat completion ({type(exc).__name__}: {exc})") from exc
