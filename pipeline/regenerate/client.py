"""Async chat client over several OpenAI-compatible endpoints: least-inflight dispatch, own retries.

Why "lanes": httpcore scans its whole connection pool on every request, so one client with 150
connections spends more CPU on pool bookkeeping than on HTTP (measured in eval/bench/bench_regen.py).
Each endpoint therefore gets several `AsyncOpenAI` clients of `connections_per_lane` connections, and each
request goes to the lane with the fewest in flight (`Endpoint.take_lane` says why not round-robin).
The openai client's own retries are off (max_retries=0): we retry here, on any endpoint, and wait at
least what the server asked (Retry-After, retry-after-ms, RateLimit-Reset, x-ratelimit-reset-*) before
that endpoint gets another request. `over_max_tokens` says when an answer is longer than the request's
max_tokens allowed (a server that ignores it), so the caller drops it with a reason instead of keeping it.
"""

from __future__ import annotations

import asyncio
import email.utils
import itertools
import json
import math
import random
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2
import openai

from catalog.errors import DraftsetError
from pipeline.regenerate.config import RetryPolicy

RETRYABLE_STATUS = {408, 409, 425, 429}
# One reply's body: a 32K-token answer with logprobs is a few MB; a server that never stops sending is cut here.
MAX_REPLY_BYTES = 64 * 1024 * 1024
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
    paused_until: float = 0.0  # monotonic time before which the server asked not to be sent anything
    lane_load: list[int] = field(init=False)  # requests in flight on each lane
    # failed attempts by `failure_kind` (retried or not): "connection/BrokenPipeError", "http_503", "timeout"
    failures_by_reason: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.lane_load = [0] * len(self.lanes)

    def fail(self, kind: str) -> None:
        """One failed attempt (`requests` counts it too; a request abandoned by Ctrl-C is neither)."""
        self.requests += 1
        self.failures += 1
        self.failures_by_reason[kind] += 1

    def stats(self) -> dict[str, Any]:
        """Attempts answered or failed on this endpoint, and the failures by reason (progress.json, --json)."""
        return {
            "url": self.url,
            "inflight": self.inflight,
            "requests": self.requests,
            "failures": self.failures,
            "failures_by_reason": dict(self.failures_by_reason.most_common()),
        }

    def take_lane(self) -> int:
        """The lane with the fewest requests in flight (release it with `release_lane`).

        Not round-robin: against a batching server (serve-dev --max-batch) a lane's connections stay held
        by requests waiting for the running batch, and round-robin queued the next requests inside that
        lane's full pool, unsent, while other lanes had connections free: batches of 512 concurrent
        requests formed at ~250 (eval/bench/bench_devserver_batching.py). The lanes hold connections for
        every request in flight, so the least-loaded lane always has one free."""
        index = min(range(len(self.lanes)), key=self.lane_load.__getitem__)
        self.lane_load[index] += 1
        return index

    def release_lane(self, index: int) -> None:
        self.lane_load[index] -= 1


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def _seconds(value: str) -> float | None:
    """A header's wait: plain seconds ("3", "1.5"), an HTTP date (Retry-After), or OpenAI's "6m0s"/"20ms"."""
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    if parts := _DURATION.findall(value):
        if "".join(n + u for n, u in parts) == value:
            return sum(float(n) * _UNIT_S[u] for n, u in parts)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def server_wait_s(headers: Any) -> float | None:
    """How long the server asked us to wait, from the headers of a 429/503 answer (None: it did not say).
    The longest of what it says wins: a rate limit on tokens may reset later than one on requests."""
    if headers is None:
        return None
    waits: list[float] = []
    if (ms := headers.get("retry-after-ms")) is not None and (v := _seconds(ms)) is not None:
        waits.append(v / 1000.0)
    for name in ("retry-after", "ratelimit-reset", "x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"):
        if (raw := headers.get(name)) is not None and (v := _seconds(raw)) is not None:
            waits.append(v)
    return max(waits) if waits else None


# An answer of more characters than this per allowed token is over max_tokens by any tokenizer (real
# tokenizers average ~4 characters a token; a token of 32 spaces in code is about the longest).
MAX_CHARS_PER_TOKEN = 32


def over_max_tokens(reply: Reply, max_tokens: int, count_tokens: Callable[[str], int] | None = None) -> str | None:
    """Why `reply` is longer than `max_tokens` allows (usage, the target's tokenizer when given, else a
    character bound), or None. A server that ignores max_tokens must not fill the output with it."""
    used = reply.usage.get("completion_tokens")
    if isinstance(used, int) and used > max_tokens:
        return f"usage says {used:,} completion tokens, over max_tokens {max_tokens:,}"
    text = (reply.reasoning or "") + reply.content + (json.dumps(reply.tool_calls) if reply.tool_calls else "")
    if len(text) > max_tokens * MAX_CHARS_PER_TOKEN:
        return (
            f"{len(text):,} characters, more than max_tokens {max_tokens:,} x {MAX_CHARS_PER_TOKEN} characters "
            "a token allow"
        )
    if count_tokens is not None and len(text) > max_tokens:  # fewer characters than tokens cannot be over
        # reasoning and answer are counted apart from the template's markers: a little slack for those
        if (n := count_tokens(text)) > max_tokens + 16:
            return f"{n:,} tokens by the target's tokenizer, over max_tokens {max_tokens:,}"
    return None


def failure_kind(exc: BaseException, status: int | str) -> str:
    """A failed attempt's kind, for counting: `http_<status>`, `timeout`, `too_large`, `bad_response`, or
    `connection/<the innermost cause>` (BrokenPipeError, ConnectionResetError, RemoteProtocolError: which
    side closed the connection, and when), `error/<type>` for anything else."""
    if isinstance(status, int):
        return f"http_{status}"
    if status in ("connection", "error"):
        root: BaseException = exc
        seen = 0
        while (below := root.__cause__ or root.__context__) is not None and seen < 10:
            root, seen = below, seen + 1
        return f"{status}/{type(root).__name__}"
    return str(status)


def _classify(exc: Exception) -> tuple[str, int | str, bool]:
    """(reason, status, retryable) for one failed attempt."""
    if (big := _too_large(exc)) is not None:  # the same request would get the same endless reply
        return f"{big}", "too_large", False
    if isinstance(exc, TimeoutError):
        return f"request passed its deadline ({exc})", "timeout", True
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


class ReplyTooLarge(Exception):
    """The endpoint's reply body passed MAX_REPLY_BYTES: reading stopped there."""


class _CappedBody(httpx2.AsyncByteStream):
    def __init__(self, inner: Any, limit: int):
        self._inner, self._limit = inner, limit

    async def __aiter__(self) -> Any:
        given = 0
        async for chunk in self._inner:
            given += len(chunk)
            if given > self._limit:
                raise ReplyTooLarge(f"reply body over {self._limit:,} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class _BoundedTransport(httpx2.AsyncHTTPTransport):
    """Every reply body read through _CappedBody: bounded before it is held, whatever the client does."""

    async def handle_async_request(self, request: Any) -> Any:
        response = await super().handle_async_request(request)
        response.stream = _CappedBody(response.stream, MAX_REPLY_BYTES)
        return response


def _too_large(exc: BaseException) -> ReplyTooLarge | None:
    seen: BaseException | None = exc
    while seen is not None:  # the openai client wraps transport errors (APIConnectionError from ...)
        if isinstance(seen, ReplyTooLarge):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


class EndpointPool:
    """Dispatch each request to the endpoint with the fewest requests in flight (ties: round-robin)."""

    def __init__(
        self, urls: list[str], *, api_key: str, retry: RetryPolicy, max_inflight: int, connections_per_lane: int = 8
    ):
        n_lanes = max(1, math.ceil(max_inflight / connections_per_lane))
        limits = httpx2.Limits(max_connections=connections_per_lane, max_keepalive_connections=connections_per_lane)
        tls = httpx2.create_ssl_context()  # loading CA certificates costs ~0.1 s: once, not once per lane

        def lane(url: str) -> openai.AsyncOpenAI:
            http = openai.DefaultAsyncHttpxClient(transport=_BoundedTransport(limits=limits, verify=tls))
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
            if (paused := endpoint.paused_until - time.monotonic()) > 0:  # it asked for a pause: honour it
                await asyncio.sleep(paused)
            endpoint.inflight += 1
            lane = endpoint.take_lane()
            started = time.monotonic()
            asked: float | None = None
            try:
                # A deadline, not httpx's per-read idle timeout: a server trickling a byte at a time never idles.
                # asyncio.timeout, not wait_for: Python 3.11's wait_for returns the reply when the request ends as
                # the caller is cancelled, and so swallows the cancellation (Ctrl-C); the worker then went on
                # answering rows, and waited forever for more once the queue was empty.
                try:
                    async with asyncio.timeout(self.retry.timeout_s):
                        raw = await endpoint.lanes[lane].post("/chat/completions", body=body, cast_to=bytes)
                except TimeoutError:
                    raise TimeoutError(f"{self.retry.timeout_s:g} s") from None
                reply = _reply(json.loads(raw), endpoint.url, attempt, time.monotonic() - started)
                endpoint.requests += 1
                return reply
            except Exception as exc:  # classified below; anything unknown is not retried
                reason, status, retryable = _classify(exc)
                endpoint.fail(failure_kind(exc, status))
                if not retryable or attempt >= self.retry.max_attempts:
                    raise RequestFailed(f"{reason} (endpoint {endpoint.url})", attempt, status) from exc
                response = getattr(exc, "response", None)
                asked = server_wait_s(response.headers if response is not None else None)
            finally:  # also when cancelled (Ctrl-C): the request is abandoned, counted neither way
                endpoint.inflight -= 1
                endpoint.release_lane(lane)
            delay = min(self.retry.backoff_max_s, self.retry.backoff_s * 2 ** (attempt - 1))
            delay *= 0.5 + random.random() / 2  # jitter: no synchronized retry storms
            if asked is not None:  # at least what the server asked (bounded: a hostile header cannot stall us)
                asked = min(asked, self.retry.retry_after_max_s)
                endpoint.paused_until = max(endpoint.paused_until, time.monotonic() + asked)
                delay = max(delay, asked * (1 + random.random() / 10))
            await asyncio.sleep(delay)
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
