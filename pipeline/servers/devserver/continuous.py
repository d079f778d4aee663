"""Continuous batching for the dev server (`serve-dev --batching continuous`): transformers' own manager.

Why: static batching (batching.py) runs one left-padded `generate` a batch, so every batch decodes as many
steps as its longest answer, and a new batch waits until the whole previous one has ended; on an H200 that
was the slowest stage of the GPU run (~86-106 rows/s at --max-batch 4096, eval/bench/real_target_stages_notes.md).
transformers' `ContinuousBatchingManager` (paged KV cache, one generation thread) admits a request into the
running batch as soon as a slot and cache blocks are free, and ends each at its own end-of-turn or budget.
Nothing here schedules or pages by hand: this file only translates a request into `add_request` and the
manager's result back into a `Generation`.

What takes this path: plain greedy requests (no stream, no grammar, temperature 0), which is what
`regenerate` sends. Sampled requests go to the static batcher: the manager samples with one seed for all its
requests (`ContinuousBatchingConfig.seed`, set once at start), so a request's own `seed` could not be honoured.
Streamed and constrained requests stay on the serial path, as under static batching.

Written against the API common to transformers 5.17 (the GPU image) and 5.24 (here): `init_continuous_batching`
(generation_config, continuous_batching_config), `start`/`stop`, `add_request(input_ids, request_id,
max_new_tokens, eos_token_id=...)`, `register_result_handler`, `cancel_request`, and `GenerationOutput`'s
`generated_tokens`/`error`/`is_finished`. Their differences are left to the library: 5.24 keeps `sdpa` (or
switches to an installed flash kernel), 5.17 switches to `paged|sdpa`, which refuses a plain forward.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import threading
import time
from typing import TYPE_CHECKING, Any

from catalog.errors import DraftsetError
from pipeline.servers.devserver.batch_stats import log as logger

if TYPE_CHECKING:
    from pipeline.servers.devserver.engine import Engine, Generation, SamplingParams

# Share of the device memory left after loading that the paged KV cache may take (transformers' own default is
# 0.9 on a GPU, 0.6 of RAM on CPU): the rest stays for the static path, which still answers sampled and
# streamed requests with the same weights, and for the SDPA path's attention mask (transformers sizes it in).
CACHE_MEMORY_SHARE = {"cuda": 0.5, "cpu": 0.05}
# Tokens one step may carry (decode rows plus prefill chunks). transformers' default is 8,192; on CPU the SDPA
# path builds a [tokens, cache + tokens] float mask a step, so a smaller step keeps the CPU's mask small.
CPU_BATCH_TOKENS = 512
SUMMARY_EVERY = 1000  # answered requests per INFO summary line


class ContinuousBatcher:
    """Owns one running `ContinuousBatchingManager`; `submit` (from the event loop) returns the request's answer."""

    def __init__(self, engine: Engine, max_batch: int):
        import torch
        import transformers
        from transformers import ContinuousBatchingConfig

        self.engine = engine
        self.max_batch = max_batch
        # A model of its own over the same weights: the manager switches its model's attention implementation
        # while it runs (5.17: to `paged|sdpa`, which refuses the plain `generate` the serial path calls),
        # and the config it switches must not be the serial path's. deepcopy with the tensors in its memo copies
        # the modules and the config, never a parameter or buffer.
        tensors = itertools.chain(engine.model.parameters(), engine.model.buffers())
        self.model = copy.deepcopy(engine.model, memo={id(t): t for t in tensors})
        if engine.device.type == "cpu":
            _one_thread_forward(self.model)
        generation = copy.deepcopy(engine.model.generation_config)  # what the static path's `generate` starts from
        generation.do_sample = False
        generation.eos_token_id = engine.eos_id
        generation.pad_token_id = engine.tokenizer.pad_token_id
        device = engine.device.type
        settings: dict[str, Any] = {
            "max_requests_per_batch": max_batch,
            "max_memory_percent": CACHE_MEMORY_SHARE.get(device, CACHE_MEMORY_SHARE["cuda"]),
        }
        if device == "cpu":
            settings["max_batch_tokens"] = CPU_BATCH_TOKENS
        self.manager = self.model.init_continuous_batching(
            generation_config=generation, continuous_batching_config=ContinuousBatchingConfig(**settings)
        )

        def start() -> None:
            # 5.24 runs its loop in the starting thread's mode, 5.17 under no_grad. No `warmup()` first: run under
            # inference mode it leaves tensors 5.17's loop cannot update in place (the notes of the bench).
            with torch.inference_mode():
                self.manager.start()

        # Started from a daemon thread, so the manager's generation thread is one too (threads inherit the flag):
        # a server that is never stopped (Ctrl-C, a failed test) must not keep the process alive. app.py stops
        # the manager when the server shuts down.
        starter = threading.Thread(target=start, name="devserver-continuous-start", daemon=True)
        starter.start()
        starter.join()
        self.version = transformers.__version__
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self.answered = 0
        self.tokens = 0
        self._since = time.monotonic()

    def describe(self) -> str:
        """The startup line: what runs continuously, with which attention, and what falls back where."""
        return (
            f"continuous batching (transformers {self.version} ContinuousBatchingManager, attention "
            f"{self.model.config._attn_implementation}, up to {self.max_batch} requests a step) answers greedy "
            "plain requests; sampled ones take the static batcher (the manager has one seed, not one a request), "
            "streamed and constrained ones run one at a time"
        )

    async def submit(self, prompt_ids: list[int], params: SamplingParams) -> Generation:
        from pipeline.servers.devserver.engine import Generation

        if params.temperature > 0:  # a programming error: app.py routes sampled requests elsewhere
            raise ValueError("the continuous batcher answers greedy requests only")
        budget = self.engine.max_new_tokens(len(prompt_ids), params.max_tokens)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        request_id = f"dev-{next(self._ids)}"

        def done(output: Any) -> None:  # on the event loop (the manager posts it with call_soon_threadsafe)
            if output.is_finished() and not future.done():
                future.set_result(output)

        # the handler first: a result that came before it was registered would go to the manager's shared queue
        self.manager.register_result_handler(request_id, done)
        added = self.manager.add_request(prompt_ids, request_id, max_new_tokens=budget, eos_token_id=self.engine.eos_id)
        if added is None:
            # no public way to take a handler back: forget it where 5.17 and 5.24 keep it, if they still do
            handlers = getattr(getattr(self.manager, "output_router", None), "result_handlers", None)
            if isinstance(handlers, dict):
                handlers.pop(request_id, None)
            raise DraftsetError(f"continuous batching refused request {request_id}: its generation thread has stopped")
        try:
            output = await future
        except asyncio.CancelledError:  # the request was abandoned: free its slot and cache blocks
            self.manager.cancel_request(request_id)
            raise
        if output.error is not None:
            raise RuntimeError(f"continuous batching failed request {request_id}: {output.error}")
        tokens = list(output.generated_tokens)
        self._count(len(tokens))
        return Generation(tokens, "stop" if tokens and tokens[-1] == self.engine.eos_id else "length")

    def _count(self, tokens: int) -> None:
        with self._lock:
            self.answered += 1
            self.tokens += tokens
            if self.answered % SUMMARY_EVERY:
                return
            now = time.monotonic()
            span, self._since = now - self._since, now
        logger.info(
            "continuous: %d requests answered, %d tokens; the last %d in %.1f s (%.1f requests/s)",
            self.answered,
            self.tokens,
            SUMMARY_EVERY,
            span,
            SUMMARY_EVERY / span if span > 0 else 0.0,
        )

    def stop(self) -> None:
        self.manager.stop(block=True, timeout=10)


def _one_thread_forward(model: Any) -> None:
    """Run the manager's forward passes on one intra-op thread (pipeline/model/runtime.py says why): on the
    2-core dev box, with another process busy, a 32-request toy run took 25 s on two threads and 1.1 s on one."""
    from pipeline.model.runtime import single_thread

    forward = model.forward

    def one_thread(*args: Any, **kwargs: Any) -> Any:
        with single_thread():
            return forward(*args, **kwargs)

    model.forward = one_thread  # an instance attribute: nn.Module.__call__ looks `forward` up on the instance
