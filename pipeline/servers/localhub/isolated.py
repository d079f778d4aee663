"""Pyarrow work on untrusted data files, in worker processes with memory and time limits.

libarrow can segfault or run out of memory on a hostile file (a 50,000-deep JSON row crashed the whole
server in one unauthenticated GET). Every viewer read therefore runs in a separate process: a crash,
a MemoryError or a timeout fails that one request with the viewer's error answer, the pool is rebuilt,
and the server goes on. Workers are spawned (not forked: the server is multi-threaded), limited to
`MAX_WORKER_MEMORY` of address space, and each job to `MAX_REQUEST_S` of wall time.

What comes back is a small summary (row count, sizes, features, the first rows as JSON-safe values),
cached per (revision, files) so repeated viewer calls do not re-read the files.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from catalog import limits
from catalog.isolate import exit_with_parent

WORKERS = 2
CACHE_ENTRIES = 128


class ReadFailed(Exception):
    """The worker could not read the files (bad data, crash, memory or time limit): one line why."""


def _limit_worker(server: int) -> None:
    """Runs in each worker before any job: cap its address space so a hostile file cannot take the host,
    and end with the server (pid `server`) however it ends (kill -9 included, during the worker's start)."""
    import resource

    exit_with_parent(server)
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = limits.MAX_WORKER_MEMORY
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ValueError, OSError):  # not permitted here: the time limit still applies
        pass


def _noop(_: int) -> None:
    return None


class IsolatedReader:
    def __init__(
        self,
        workers: int = WORKERS,
        timeout_s: float = limits.MAX_REQUEST_S,
        job: Callable[[tuple[str, ...], int], dict[str, Any]] | None = None,
    ):
        """`job(paths, first_rows)` runs in the worker (a module-level function; tests pass one that
        crashes or hangs); by default splits.summarize."""
        self.workers, self.timeout_s, self.job = workers, timeout_s, job
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple, dict[str, Any]] = OrderedDict()
        self.closes = 0  # times close() ran: a warm-up asked for before the last close starts no pool

    def _get_pool(self, closes: int | None = None) -> ProcessPoolExecutor | None:
        """The pool, started if need be; None (nothing started) when `closes` is given and close() ran since."""
        with self._lock:
            if closes is not None and closes != self.closes:
                return None
            if self._pool is None:
                import multiprocessing

                self._pool = ProcessPoolExecutor(
                    self.workers,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_limit_worker,
                    initargs=(os.getpid(),),
                )
            return self._pool

    def _discard(self, pool: ProcessPoolExecutor) -> None:
        """Kill a pool whose worker crashed or hangs; the next request starts a fresh one."""
        with self._lock:
            if self._pool is pool:
                self._pool = None
        # The executor cannot cancel a running job: its processes are killed (private map, no public API).
        for proc in list(getattr(pool, "_processes", {}).values()):
            proc.kill()
        pool.shutdown(wait=False, cancel_futures=True)

    def warm(self, closes: int | None = None) -> None:
        """Start the workers now (spawning imports pyarrow: seconds on a busy host), outside any time limit.
        With `closes` (the count read when the Hub started), a Hub stopped before its warm-up got here starts
        nothing: workers spawned then would outlive every Hub, until the process ends."""
        pool = self._get_pool(closes)
        if pool is not None:
            list(pool.map(_noop, range(self.workers)))

    def summary(self, sha: str, paths: tuple[str, ...], first_rows: int) -> dict[str, Any]:
        key = (sha, paths, first_rows)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        from pipeline.servers.localhub.splits import summarize

        pool = self._get_pool()
        assert pool is not None  # no `closes`: always a pool
        try:
            future = pool.submit(self.job or summarize, paths, first_rows)
            result = future.result(timeout=self.timeout_s)
        except FutureTimeout:
            self._discard(pool)
            raise ReadFailed(f"reading took longer than {self.timeout_s:g} s (the request time limit)") from None
        except BrokenProcessPool:
            self._discard(pool)
            raise ReadFailed(
                "the reader process crashed on this file (killed by a signal or out of its "
                f"{limits.MAX_WORKER_MEMORY // 2**20:,} MiB memory limit)"
            ) from None
        except MemoryError:
            raise ReadFailed(
                f"reading needs more than the {limits.MAX_WORKER_MEMORY // 2**20:,} MiB memory limit"
            ) from None
        if "error" in result:
            raise ReadFailed(result["error"])
        with self._lock:
            self._cache[key] = result
            while len(self._cache) > CACHE_ENTRIES:
                self._cache.popitem(last=False)
        return result

    def close(self) -> None:
        """Stop the workers now: every shutdown path of the Hub calls this (server.py, hub serve). The
        executor's own shutdown only asks idle workers to leave; a busy one would run on, so kill them."""
        with self._lock:
            pool, self._pool = self._pool, None
            self.closes += 1
        if pool is not None:
            processes = list(getattr(pool, "_processes", {}).values())  # private map, no public API
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in processes:
                proc.kill()
            for proc in processes:
                proc.join(5)


READER = IsolatedReader()
