"""The dev server's HTTP surface (starlette): /health, /v1/models, /v1/chat/completions (stream or not)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from pipeline.servers.devserver.batching import Batcher
from pipeline.servers.devserver.constrain import forced_call_schema, response_schema
from pipeline.servers.devserver.continuous import ContinuousBatcher
from pipeline.servers.devserver.engine import (
    Batching,
    Detokenizer,
    Engine,
    Generation,
    SamplingParams,
    normalise_messages,
)
from pipeline.servers.devserver.errors import RequestError
from pipeline.servers.devserver.protocol import ChatRequest, envelope, error_body, usage
from pipeline.servers.devserver.toolcalls import call as tool_call
from pipeline.servers.devserver.toolcalls import parse_tool_calls

_DONE = object()


def _sse(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"


def create_app(engine: Engine) -> Starlette:
    # Plain requests (no stream, no grammar) go to the batch worker when the engine batches; the rest stay serial.
    # Under continuous batching the greedy ones go to transformers' manager, the sampled ones to the static worker.
    batcher = Batcher(engine, engine.max_batch) if engine.max_batch > 1 else None
    continuous = ContinuousBatcher(engine, engine.max_batch) if engine.batching is Batching.continuous else None

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        yield
        if continuous is not None:  # the manager's thread ends with the server, its in-flight requests flushed
            await asyncio.get_running_loop().run_in_executor(None, continuous.stop)

    async def health(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "model": engine.served_name})

    async def models(_: Request) -> JSONResponse:
        card = {
            "id": engine.served_name,
            "object": "model",
            "created": 0,
            "owned_by": "draftset",
            "root": str(engine.model_dir),
            "max_model_len": engine.max_positions,
        }
        return JSONResponse({"object": "list", "data": [card]})

    async def chat(request: Request) -> Response:
        try:
            req = ChatRequest.model_validate(await request.json())
            if req.model not in (engine.served_name, str(engine.model_dir)):
                return JSONResponse(
                    error_body(
                        f"model {req.model!r} is not served here; this server serves {engine.served_name!r}",
                        "NotFoundError",
                        404,
                    ),
                    status_code=404,
                )
            prompt_ids = engine.render(normalise_messages(req.messages), req.tools, req.thinking)
            engine.max_new_tokens(len(prompt_ids), req.token_budget)  # refuse an over-long prompt up front
            constraint = _constraint(engine, req)
        except (ValidationError, RequestError) as exc:
            return JSONResponse(error_body(str(exc)), status_code=400)
        except (ValueError, RecursionError) as exc:  # not JSON, not UTF-8, or nested past the parser's limit
            return JSONResponse(
                error_body(f"request body is not JSON: {type(exc).__name__}: {str(exc)[:200]}"), status_code=400
            )
        params = SamplingParams(req.token_budget, req.temperature, req.top_p, req.seed)
        if req.stream:
            return StreamingResponse(
                _stream(engine, req, prompt_ids, params, constraint), media_type="text/event-stream"
            )
        detok = Detokenizer(engine, req.thinking)
        if continuous is not None and constraint is None and params.temperature <= 0:
            gen = await continuous.submit(prompt_ids, params)
            detok.feed(gen.completion_ids)
        elif batcher is not None and constraint is None:
            gen = await batcher.submit(prompt_ids, params)
            detok.feed(gen.completion_ids)
        else:
            gen = await _serial(request, engine, prompt_ids, params, detok, constraint)
        content, calls, finish = _answer(req, detok, gen.finish_reason)
        message: dict[str, Any] = {"role": "assistant", "content": content, "tool_calls": calls}
        if req.thinking:
            message["reasoning_content"] = detok.text["reasoning"]
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        body = envelope(engine.served_name, "chat.completion")
        if req.return_token_ids:
            choice["token_ids"] = gen.completion_ids
            body["prompt_token_ids"] = prompt_ids
        body |= {"choices": [choice], "usage": usage(len(prompt_ids), len(gen.completion_ids))}
        return JSONResponse(body)

    async def internal(_: Request, exc: Exception) -> JSONResponse:
        # Whatever else fails answers the OpenAI error shape, never starlette's plain-text 500.
        return JSONResponse(
            error_body(f"internal error: {type(exc).__name__}: {str(exc)[:200]}", "InternalServerError", 500),
            status_code=500,
        )

    app = Starlette(
        routes=[
            Route("/health", health),
            Route("/v1/models", models),
            Route("/v1/chat/completions", chat, methods=["POST"]),
        ],
        exception_handlers={Exception: internal},
        lifespan=lifespan,
    )
    app.state.batcher = batcher  # its `log` holds every batch's size and timing (the bench, the tests)
    app.state.continuous = continuous
    return app


async def _serial(
    request: Request,
    engine: Engine,
    prompt_ids: list[int],
    params: SamplingParams,
    detok: Detokenizer,
    constraint: Any | None,
) -> Generation:
    """One request on the engine's lock, in a worker thread; stopped early when the client leaves."""
    loop = asyncio.get_running_loop()
    cancelled = threading.Event()
    watcher = asyncio.create_task(_watch_disconnect(request, cancelled))
    try:
        return await loop.run_in_executor(None, engine.generate, prompt_ids, params, detok.push, cancelled, constraint)
    finally:
        cancelled.set()
        watcher.cancel()


async def _watch_disconnect(request: Request, cancelled: threading.Event) -> None:
    """Stop a non-streamed generation whose client hung up (e.g. timed out): the model serves one request at
    a time, so an abandoned generation would hold everyone queued behind it."""
    while not cancelled.is_set():
        if await request.is_disconnected():
            cancelled.set()
            return
        await asyncio.sleep(0.2)


def _constraint(engine: Engine, req: ChatRequest) -> Any | None:
    """The logits processor for a forced tool call or a JSON response_format; None for free text."""
    if req.forced_tools:
        return engine.grammars.processor(forced_call_schema(req.tools or [], req.forced_tools))
    schema = response_schema(req.response_format)
    return None if schema is None else engine.grammars.processor(schema)


def _answer(req: ChatRequest, detok: Detokenizer, finish: str) -> tuple[str | None, list | None, str]:
    """(content, tool_calls, finish_reason) of a finished generation.

    A forced call was decoded as {"name", "arguments"} JSON: it is the call. With tools offered and choice
    auto, the template's tool-call markers in the completion become `tool_calls`. A call cut off by
    max_tokens stays text with finish_reason "length"."""
    text = detok.text["content"]
    if req.forced_tools and finish == "stop":
        body = json.loads(text)  # constrained: it parses whenever generation ended on the end-of-turn token
        return None, [tool_call(body["name"], body["arguments"])], "tool_calls"
    if req.parses_tool_calls:
        before, calls = parse_tool_calls(detok.raw_content(), req.tool_names)
        if calls:
            return before.strip() or None, calls, "tool_calls"
    return text, None, finish


async def _stream(
    engine: Engine, req: ChatRequest, prompt_ids: list[int], params: SamplingParams, constraint: Any | None
) -> AsyncIterator[str]:
    """Server-sent events: role chunk, one chunk per token with text, a finish chunk, usage, [DONE]."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    cancelled = threading.Event()
    detok = Detokenizer(engine, req.thinking)

    def work() -> Generation:
        try:
            return engine.generate(
                prompt_ids, params, lambda t: loop.call_soon_threadsafe(queue.put_nowait, t), cancelled, constraint
            )
        finally:
            loop.call_soon_threadsafe(queue.put_nowait, _DONE)

    head = envelope(engine.served_name, "chat.completion.chunk")
    first = {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}
    if req.return_token_ids:
        first["prompt_token_ids"] = prompt_ids
    # Content that may turn out to be a tool call is held back and sent whole at the end, as content or
    # as one tool_calls delta (reasoning still streams).
    hold = bool(req.forced_tools) or req.parses_tool_calls
    future = loop.run_in_executor(None, work)
    try:
        yield _sse(first)
        while (token := await queue.get()) is not _DONE:
            piece = detok.push(token)
            delta: dict[str, Any] = (
                {} if piece is None else {"reasoning_content" if piece[0] == "reasoning" else "content": piece[1]}
            )
            if hold:
                delta.pop("content", None)
            choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": None}
            if req.return_token_ids:
                choice["token_ids"] = [token]
            elif not delta:
                continue  # a token with no visible text (e.g. </think>) only matters to token-id clients
            yield _sse({**head, "choices": [choice]})
        gen = await future
        finish = gen.finish_reason
        if hold:
            content, calls, finish = _answer(req, detok, gen.finish_reason)
            delta = {"tool_calls": [{"index": i, **c} for i, c in enumerate(calls)]} if calls else {"content": content}
            yield _sse({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        yield _sse({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if req.include_usage:
            yield _sse({**head, "choices": [], "usage": usage(len(prompt_ids), len(gen.completion_ids))})
        yield "data: [DONE]\n\n"
    finally:
        cancelled.set()  # a client that hangs up stops the generation at its next token
