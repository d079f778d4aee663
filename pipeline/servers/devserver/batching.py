"""Batched generation for the dev server on a GPU: requests that arrive together are answered in one `generate`.

Why by hand: the dev server stands in for SGLang where no SGLang is installed (the GPU image has none and
nothing can be fetched there), and batch-1 `generate` on an H200 makes ~9 tokens/s for a 135M model
(launch-bound), so regenerating tens of thousands of prompts would take hours. SGLang batches continuously
(a finished row frees its slot at once, with a paged KV cache); this is static batching, the simplest form
that keeps the GPU busy: the worker takes what is waiting (up to `max_batch` requests with the same sampling
settings), left-pads the prompts, runs one `generate`, and answers each request with its own tokens, cut at
the end-of-turn token and at its own max_tokens. The regenerate stage's client is the same openai client
either way: the wire protocol, the retries and the accounting do not know which server answered.

Greedy requests get the tokens a batch-1 call would (up to the numerics of a padded batch in the model's
dtype). Sampled requests in a batch share one seed (the first request's): per-request seeds are exact only
on the serial path, which the app keeps for streaming and constrained requests.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pipeline.servers.devserver.batch_stats import BatchLog, BatchStat
from pipeline.servers.devserver.batch_stats import log as logger

if TYPE_CHECKING:
    from pipeline.servers.devserver.engine import Engine, Generation, SamplingParams

# How the worker gathers a batch. A step costs about the same for 1 row as for 4,096 on a GPU, so waiting a
# little for more requests is cheap, and closing early is dear: the previous 20 ms window, then 2 ms between
# requests, closed while the event loop was still parsing the clients' requests (each one's answer had been
# re-decoded token by token, ~5 ms), and batches of 4,096 requests in flight ran at a few dozen (issue #29).
QUIET_S = 0.05  # the queue has stopped growing: no new request for this long (a few GIL switch intervals),
QUIET_SHARE = 0.1  # ... or a tenth of the last batch's run, up to QUIET_MAX_S: the clients a batch answered
QUIET_MAX_S = 1.0  # come back only after their answers went out and were read, which takes longer for more
WAIT_SHARE = 0.5  # ... or the worker has waited half as long as the last batch ran
MAX_WAIT_S = 10.0  # ... and never longer than this
FIRST_RUN_S = 4.0  # what the first batch's wait is sized on, before any batch has run


@dataclass
class _Pending:
    prompt_ids: list[int]
    budget: int
    params: SamplingParams
    done: Callable[[Generation | BaseException], None]
    arrived: float = field(default_factory=time.monotonic)


@dataclass
class Batcher:
    """Owns one worker thread; `submit` (from the event loop) returns when the request's batch is done."""

    engine: Engine
    max_batch: int
    _queue: queue.Queue[_Pending] = field(default_factory=queue.Queue)
    log: BatchLog = field(default_factory=BatchLog)  # every batch's size, wait, seconds, tokens
    _last_run_s: float = FIRST_RUN_S

    @property
    def batches(self) -> int:
        return self.log.batches

    @property
    def largest(self) -> int:
        return self.log.largest

    def __post_init__(self) -> None:
        threading.Thread(target=self._work, name="devserver-batcher", daemon=True).start()

    async def submit(self, prompt_ids: list[int], params: SamplingParams) -> Generation:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Generation] = loop.create_future()

        def done(result: Generation | BaseException) -> None:
            def settle() -> None:
                if future.done():  # the client left and the request was cancelled
                    return
                if isinstance(result, BaseException):
                    future.set_exception(result)
                else:
                    future.set_result(result)

            loop.call_soon_threadsafe(settle)

        budget = self.engine.max_new_tokens(len(prompt_ids), params.max_tokens)
        self._queue.put(_Pending(prompt_ids, budget, params, done))
        return await future

    # -- the worker ------------------------------------------------------------------------
    def _work(self) -> None:
        held: list[_Pending] = []  # taken from the queue but of other sampling settings: first in the next batch
        while True:
            first = held.pop(0) if held else self._queue.get()
            batch: list[_Pending] = [first]
            rest: list[_Pending] = []
            for item in held:
                (batch if _same(item, first) and len(batch) < self.max_batch else rest).append(item)
            held = rest
            gathering = time.monotonic()
            self._gather(batch, first, held)
            self._run(batch, time.monotonic() - gathering)

    def _gather(self, batch: list[_Pending], first: _Pending, held: list[_Pending]) -> None:
        """Add waiting requests to `batch` until it is full, the queue stops growing, or the wait is spent."""
        last = self._last_run_s
        limit = time.monotonic() + min(MAX_WAIT_S, max(QUIET_S, WAIT_SHARE * last))
        quiet = min(QUIET_MAX_S, max(QUIET_S, QUIET_SHARE * last))
        while len(batch) < self.max_batch:
            timeout = min(quiet, limit - time.monotonic())
            if timeout <= 0:
                return
            try:
                item = self._queue.get(timeout=timeout)
            except queue.Empty:
                return
            (batch if _same(item, first) else held).append(item)

    def _run(self, batch: list[_Pending], gathered_s: float) -> None:
        started = time.monotonic()
        try:
            outputs = self.engine.generate_batch(
                [p.prompt_ids for p in batch], [p.budget for p in batch], batch[0].params
            )
            if len(outputs) != len(batch):  # a request without its answer would wait forever
                raise RuntimeError(f"generate_batch gave {len(outputs)} answers for {len(batch)} requests")
        except Exception as exc:  # every waiting request gets the error (a 500 naming it); the worker keeps serving
            logger.warning("batch of %d failed: %s: %s", len(batch), type(exc).__name__, str(exc)[:200])
            for p in batch:
                p.done(exc)
            return
        waited = started - min(p.arrived for p in batch)
        tokens = sum(len(g.completion_ids) for g in outputs)
        self._last_run_s = time.monotonic() - started
        self.log.add(BatchStat(len(batch), waited, gathered_s, self._last_run_s, tokens))
        for p, gen in zip(batch, outputs):
            p.done(gen)


def _same(a: _Pending, b: _Pending) -> bool:
    """Requests that can share one `generate`: greedy with greedy, sampled only with the same temperature/top_p."""
    if a.params.temperature <= 0 and b.params.temperature <= 0:
        return True
    return (a.params.temperature, a.params.top_p) == (b.params.temperature, b.params.top_p)
