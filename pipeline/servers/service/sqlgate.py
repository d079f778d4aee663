"""User SQL on its own path: bounded in time, memory, rows and bytes, few at once, shared fairly.

Why a gate of its own: the catalog's read slots (catalog/owner.py) serve the pages and the API's small
reads; a viewer's slowest query must not hold one of them, nor run on the service's database at all.
Each statement runs in a capped child on a snapshot of the catalog (catalog/sql_child.py), SQL_SLOTS at
once, one per user at a time; a freed slot goes to the waiting user who used the console least lately
(fairshare.py), so one user's loop cannot starve another. A statement may wait twice its time limit for a
slot (so a light user behind one running statement of the same limit gets the next slot, never a 503;
past that, 503), and then runs for its full time limit; it ends at that limit, when its client
disconnects, or at shutdown (catalog.sql.cancel_all), each by killing its child.
"""

from __future__ import annotations

import os
import threading
import time

import anyio
import anyio.to_thread
from fastapi import Request
from fastapi.responses import Response

from catalog.db import Catalog
from catalog.sql import Watch
from catalog.sql_child import run_in_child
from catalog.sql_snapshot import Snapshots
from pipeline.servers.service import queries
from pipeline.servers.service.auth import ApiError
from pipeline.servers.service.fairshare import FairShare
from pipeline.servers.service.users import User

# One statement per core beyond the first: on 2 cores one runs while the other core answers everyone else.
SQL_SLOTS = max(1, (os.cpu_count() or 1) - 1)
DISCONNECT_POLL_S = 0.2
QUEUE_WAIT_FACTOR = 2.0  # a slot may be waited for this many times the statement's own time limit


class SqlGate:
    def __init__(self, catalog: Catalog, viewer_timeout_s: float, staff_timeout_s: float, max_bytes: int):
        self.catalog = catalog
        self.viewer_timeout_s, self.staff_timeout_s, self.max_bytes = viewer_timeout_s, staff_timeout_s, max_bytes
        self.share = FairShare(SQL_SLOTS)  # statements at once, handed to the least-served waiter
        self.threads = anyio.CapacityLimiter(SQL_SLOTS)  # their threads: never waited for, a slot is held
        self.snapshots = Snapshots(catalog)
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
        wait_s = QUEUE_WAIT_FACTOR * timeout
        try:
            with anyio.fail_after(wait_s):
                await self.share.acquire(user.name)
        except TimeoutError:
            raise ApiError(
                503,
                f"the SQL console is busy ({SQL_SLOTS} statement(s) running, {self.share.waiting()} waiting) "
                f"and no slot came to {user.name} within {wait_s:g} s",
                "retry in a few seconds",
            ) from None
        started = time.monotonic()
        try:
            watch = Watch(timeout)

            async def watch_client() -> None:
                while True:
                    await anyio.sleep(DISCONNECT_POLL_S)
                    if await request.is_disconnected():
                        watch.cancel("the client disconnected")
                        return

            answer: bytes | None = None
            failure: Exception | None = None
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch_client)
                try:
                    answer = await anyio.to_thread.run_sync(
                        self._statement, query, limit, watch, user, limiter=self.threads
                    )
                except Exception as exc:  # raised below, outside the task group (else an ExceptionGroup)
                    failure = exc
                finally:
                    tg.cancel_scope.cancel()
        finally:
            self.share.release(user.name, time.monotonic() - started)
        if failure is not None:
            raise failure
        return Response(answer, media_type="application/json")

    def _statement(self, query: str, limit: int, watch: Watch, user: User) -> bytes:
        hide_secrets = not user.may("operator")
        return run_in_child(
            self.snapshots,
            queries.run_sql_in_child,
            query,
            limit,
            self.max_bytes,
            hide_secrets,
            watch=watch,
            preload=(queries.__name__,),
        )

    def close(self) -> None:
        self.snapshots.close()
