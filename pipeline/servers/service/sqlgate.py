"""User SQL on its own path: bounded in time, rows and bytes, few at once, never on the event loop.

Why a gate of its own: the catalog's read slots (catalog/owner.py) serve the pages and the API's small
reads; a viewer's slowest query must not hold one of them. User statements run on their own threads
(an anyio limiter of SQL_SLOTS), one per user at a time; waiting for a slot counts against the
statement's time limit, so four viewers' slow queries cost each other time, never the other users'.
A statement ends at its time limit, when its client disconnects, or at shutdown (catalog.sql.cancel_all),
each through DuckDB's interrupt().
"""

from __future__ import annotations

import os
import threading
import time
from functools import partial

import anyio
import anyio.to_thread
from fastapi import Request
from fastapi.responses import Response

from catalog.db import Catalog
from catalog.sql import Watch
from pipeline.servers.service import queries
from pipeline.servers.service.auth import ApiError
from pipeline.servers.service.users import User

# One statement per core beyond the first: on 2 cores one runs while the other core answers everyone else.
SQL_SLOTS = max(1, (os.cpu_count() or 1) - 1)
DISCONNECT_POLL_S = 0.2


class SqlGate:
    def __init__(self, catalog: Catalog, viewer_timeout_s: float, staff_timeout_s: float, max_bytes: int):
        self.catalog = catalog
        self.viewer_timeout_s, self.staff_timeout_s, self.max_bytes = viewer_timeout_s, staff_timeout_s, max_bytes
        self.gate = anyio.Semaphore(SQL_SLOTS)  # statements at once (waited for with the time limit)
        self.threads = anyio.CapacityLimiter(SQL_SLOTS)  # their threads: never waited for, the gate is held
        self._running: set[str] = set()
        self._lock = threading.Lock()

    def timeout_for(self, user: User) -> float:
        return self.staff_timeout_s if user.may("reviewer") else self.viewer_timeout_s

    async def run(self, request: Request, user: User, query: str, limit: int) -> Response:
        with self._lock:
            if user.name in self._running:
                raise ApiError(
                    429,
                    f"{user.name} already has a query running",
                    "wait for it to finish (or cancel it by closing that request), then send this one",
                )
            self._running.add(user.name)
        try:
            return await self._run(request, user, query, limit)
        finally:
            with self._lock:
                self._running.discard(user.name)

    async def _run(self, request: Request, user: User, query: str, limit: int) -> Response:
        timeout = self.timeout_for(user)
        deadline = time.monotonic() + timeout
        try:
            with anyio.fail_after(timeout):
                await self.gate.acquire()
        except TimeoutError:
            raise ApiError(
                503,
                f"the SQL console is busy ({SQL_SLOTS} statement(s) running) and no slot freed within {timeout:g} s",
                "retry in a few seconds",
            ) from None
        try:
            watch = Watch(max(0.05, deadline - time.monotonic()), timeout)  # queueing is part of the limit

            async def watch_client() -> None:
                while True:
                    await anyio.sleep(DISCONNECT_POLL_S)
                    if await request.is_disconnected():
                        watch.cancel("the client disconnected")
                        return

            work = partial(queries.run_sql, self.catalog, query, limit, self.max_bytes, watch, not user.may("operator"))
            answer: bytes | None = None
            failure: Exception | None = None
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch_client)
                try:
                    answer = await anyio.to_thread.run_sync(work, limiter=self.threads)
                except Exception as exc:  # raised below, outside the task group (else an ExceptionGroup)
                    failure = exc
                finally:
                    tg.cancel_scope.cancel()
        finally:
            self.gate.release()
        if failure is not None:
            raise failure
        return Response(answer, media_type="application/json")
