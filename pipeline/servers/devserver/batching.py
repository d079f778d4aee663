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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipeline.servers.devserver.engine import Engine, Generation, SamplingParams

GATHER_S = 0.02  # how long the worker waits for more requests once the first one is in: a round trip on loopback


@dataclass
class _Pending:
    prompt_ids: list[int]
    budget: int
    params: SamplingParams
    done: Callable[[Generation | BaseException], None]


@dataclass
class Batcher:
    """Owns one worker thread; `submit` (from the event loop) returns when the request's batch is done."""

    engine: Engine
    max_batch: int
    _queue: queue.Queue[_Pending] = field(default_factory=queue.Queue)
    batches: int = 0  # batches run so far (the tests and the server's log read it)
    largest: int = 0

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
            deadline = GATHER_S
            while len(batch) < self.max_batch:
                try:
                    item = self._queue.get(timeout=deadline)
                except queue.Empty:
                    break
                deadline = 0.002  # once requests flow, take what is already there without waiting long
                (batch if _same(item, first) else held).append(item)
            self._run(batch)

    def _run(self, batch: list[_Pending]) -> None:
        try:
            outputs = self.engine.generate_batch(
                [p.prompt_ids for p in batch], [p.budget for p in batch], batch[0].params
            )
        except Exception as exc:  # every waiting request gets the error; the worker keeps serving
            for p in batch:
                p.done(exc)
            return
        self.batches += 1
        self.largest = max(self.largest, len(batch))
        for p, gen in zip(batch, outputs):
            p.done(gen)


def _same(a: _Pending, b: _Pending) -> bool:
    """Requests that can share one `generate`: greedy with greedy, sampled only with the same temperature/top_p."""
    if a.params.temperature <= 0 and b.params.temperature <= 0:
        return True
    return (a.params.temperature, a.params.top_p) == (b.params.temperature, b.params.top_p)


def left_padded(rows: list[list[int]], pad: int) -> tuple[Any, Any]:
    """(input_ids, attention_mask) for a batch, padded on the left so every row's next token is at the end."""
    import torch

    width = max(map(len, rows))
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, row in enumerate(rows):
        ids[i, width - len(row) :] = torch.tensor(row, dtype=torch.long)
        mask[i, width - len(row) :] = 1
    return ids, mask
