"""Row previews (the adapter page and GET /api/adapters/{repo}) under a bound of their own.

A preview reads a stranger's data files. Each file is decoded in a capped child with a 300 s wall
clock (catalog/limits.py), which is right for ingest and far too long for one page view: eight previews
of a compressed file of empty lines once held every worker thread, and every page timed out for
everyone, and the reads went on after the clients left. Here previews run on PREVIEW_SLOTS threads of
their own (never the pool the other pages use), each request stops reading at PREVIEW_DEADLINE_S or
when its client disconnects (catalog.isolate.bounded kills the child), and a stopped preview is a named
refusal (504), never a page that hangs or a partial preview kept in the cache.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from fastapi import Request

from catalog.isolate import bounded
from pipeline.servers.service.auth import ApiError

PREVIEW_SLOTS = 2
PREVIEW_DEADLINE_S = 20.0
DISCONNECT_POLL_S = 0.2
T = TypeVar("T")


class PreviewGate:
    def __init__(self, slots: int = PREVIEW_SLOTS, deadline_s: float = PREVIEW_DEADLINE_S):
        self.deadline_s = deadline_s
        self.threads = anyio.CapacityLimiter(slots)  # previews at once (waited for within the deadline)
        self._thread_tokens = anyio.CapacityLimiter(slots)  # their threads: never waited for, a slot is held

    async def run(self, request: Request, fn: Callable[..., T], *args: Any) -> T:
        """fn(*args) on a preview thread, its reads of data files bounded by this request."""
        gone = threading.Event()

        def work() -> T:
            with bounded(self.deadline_s, lambda: "the client disconnected" if gone.is_set() else None) as bound:
                result = fn(*args)
            if bound.stopped is not None:
                raise ApiError(
                    504,
                    f"preview stopped: {bound.stopped} (a preview may read for {self.deadline_s:g} s)",
                    "the dataset's files are slow or hostile to read; `draftset adapters test` reads them in full",
                )
            return result

        async def watch_client() -> None:
            while not gone.is_set():
                await anyio.sleep(DISCONNECT_POLL_S)
                if await request.is_disconnected():
                    gone.set()

        try:
            with anyio.fail_after(self.deadline_s):  # a slot for this request, within its own limit
                await self.threads.acquire()
        except TimeoutError:
            raise ApiError(
                503,
                f"every preview slot ({self.threads.total_tokens:g}) stayed busy for {self.deadline_s:g} s",
                "retry in a few seconds",
            ) from None
        answer: list[T] = []
        failure: Exception | None = None
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch_client)
                try:
                    answer.append(await anyio.to_thread.run_sync(work, limiter=self._thread_tokens))
                except Exception as exc:  # raised below, outside the task group (else an ExceptionGroup)
                    failure = exc
                finally:
                    tg.cancel_scope.cancel()
        finally:
            self.threads.release()
        if failure is not None:
            raise failure
        return answer[0]
