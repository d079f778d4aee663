"""A request body cap ahead of authentication and parsing (pure ASGI, so nothing reads a byte first).

FastAPI reads and parses a route's body before it resolves the route's dependencies (our role check),
so without a cap an anonymous client's 100 MB body is held in memory before it is refused. A declared
Content-Length over the cap is answered 413 at once, without reading; a chunked body is counted as it
arrives and cut off with 413 at the cap.
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyTooLarge(HTTPException):
    """An HTTPException, so FastAPI's body reader re-raises it as it is instead of calling it a parse error."""

    def __init__(self, limit: int):
        super().__init__(413, f"request body over the {limit:,}-byte limit")
        self.limit = limit


def too_large_body(limit: int) -> dict[str, Any]:
    return {
        "error": f"request body over the {limit:,}-byte limit",
        "next": "send a smaller request (an operator can raise DRAFTSET_MAX_BODY_BYTES)",
    }


class BodyCap:
    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await _answer_413(send, self.max_bytes)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        await self.app(scope, counted, send)


async def _answer_413(send: Send, limit: int) -> None:
    body = orjson.dumps(too_large_body(limit))
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),  # the unread body must not be taken for the next request
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
