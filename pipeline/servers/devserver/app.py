"""The dev server's HTTP surface (starlette): /health, /v1/models, /v1/chat/completions (stream or not)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from typing import Any

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from pipeline.servers.devserver.engine import Detokenizer, Engine, RequestError, SamplingParams, normalise_messages
from pipeline.servers.devserver.protocol import ChatRequest, envelope, error_body, usage

_DONE = object()


def _sse(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"


def create_app(engine: Engine) -> Starlette:
    async def health(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "model": engine.served_name})

    async def models(_: Request) -> JSONResponse:
        card = {"id": engine.served_name, "object": "model", "created": 0, "owned_by": "draftset",
                "root": str(engine.model_dir), "max_model_len": engine.max_positions}
        return JSONResponse({"object": "list", "data": [card]})

    async def chat(request: Request):
        try:
            req = ChatRequest.model_validate(await request.json())
            if req.model not in (engine.served_name, str(engine.model_dir)):
                return JSONResponse(error_body(f"model {req.model!r} is not served here; this server serves "
                                               f"{engine.served_name!r}", "NotFoundError", 404), status_code=404)
            prompt_ids = engine.render(normalise_messages(req.messages), req.tools, req.thinking)
            engine.max_new_tokens(len(prompt_ids), req.token_budget)  # refuse an over-long prompt up front
        except (ValidationError, RequestError) as exc:
            return JSONResponse(error_body(str(exc)), status_code=400)
        except (ValueError, RecursionError) as exc:  # not JSON, not UTF-8, or nested past the parser's limit
            return JSONResponse(error_body(f"request body is not JSON: {type(exc).__name__}: {str(exc)[:200]}"),
                                status_code=400)
        params = SamplingParams(req.token_budget, req.temperature, req.top_p, req.seed)
        if req.stream:
            return StreamingResponse(_stream(engine, req, prompt_ids, params), media_type="text/event-stream")
        detok = Detokenizer(engine, req.thinking)
        loop = asyncio.get_running_loop()
        gen = await loop.run_in_executor(None, engine.generate, prompt_ids, params, detok.push)
        message: dict[str, Any] = {"role": "assistant", "content": detok.text["content"], "tool_calls": None}
        if req.thinking:
            message["reasoning_content"] = detok.text["reasoning"]
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": gen.finish_reason,
                                  "logprobs": None}
        body = envelope(engine.served_name, "chat.completion")
        if req.return_token_ids:
            choice["token_ids"] = gen.completion_ids
            body["prompt_token_ids"] = prompt_ids
        body |= {"choices": [choice], "usage": usage(len(prompt_ids), len(gen.completion_ids))}
        return JSONResponse(body)

    async def internal(_: Request, exc: Exception) -> JSONResponse:
        # Whatever else fails answers the OpenAI error shape, never starlette's plain-text 500.
        return JSONResponse(error_body(f"internal error: {type(exc).__name__}: {str(exc)[:200]}",
                                       "InternalServerError", 500), status_code=500)

    return Starlette(routes=[
        Route("/health", health), Route("/v1/models", models),
        Route("/v1/chat/completions", chat, methods=["POST"]),
    ], exception_handlers={Exception: internal})


async def _stream(engine: Engine, req: ChatRequest, prompt_ids: list[int],
                  params: SamplingParams) -> AsyncIterator[str]:
    """Server-sent events: role chunk, one chunk per token with text, a finish chunk, usage, [DONE]."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    cancelled = threading.Event()
    detok = Detokenizer(engine, req.thinking)

    def work():
        try:
            return engine.generate(prompt_ids, params, lambda t: loop.call_soon_threadsafe(queue.put_nowait, t),
                                   cancelled)
        finally:
            loop.call_soon_threadsafe(queue.put_nowait, _DONE)

    head = envelope(engine.served_name, "chat.completion.chunk")
    first = {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                  "finish_reason": None}]}
    if req.return_token_ids:
        first["prompt_token_ids"] = prompt_ids
    future = loop.run_in_executor(None, work)
    try:
        yield _sse(first)
        while (token := await queue.get()) is not _DONE:
            piece = detok.push(token)
            delta = {} if piece is None else {"reasoning_content" if piece[0] == "reasoning" else "content": piece[1]}
            choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": None}
            if req.return_token_ids:
                choice["token_ids"] = [token]
            elif not delta:
                continue  # a token with no visible text (e.g. </think>) only matters to token-id clients
            yield _sse({**head, "choices": [choice]})
        gen = await future
        yield _sse({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": gen.finish_reason}]})
        if req.include_usage:
            yield _sse({**head, "choices": [], "usage": usage(len(prompt_ids), len(gen.completion_ids))})
        yield "data: [DONE]\n\n"
    finally:
        cancelled.set()  # a client that hangs up stops the generation at its next token
