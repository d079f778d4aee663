"""Batched serve-dev in front of the regenerate stage: do concurrent requests form large batches? (issue #29)

    .venv/bin/python -m eval.bench.bench_devserver_batching [--rows 2000] [--concurrency 512] [--max-batch 512]

On an H200, serve-dev --max-batch 4096 behind `regenerate --concurrency 4096` answered ~12 rows/s where one
batched `generate` makes ~170. This reproduces the shape on CPU: the toy target's dev server runs in a
SEPARATE process (as on the GPU host) with a fake GPU `generate` whose time grows with the steps, not with
the batch (`--step-ms` a step; `--gil` of it spent holding the GIL, as HF's Python loop launching kernels
does, the rest waiting as a GPU sync does). It answers real token ids of the toy tokenizer, so rendering
and detokenising cost what they cost. The client is the whole `regenerate` stage (parquet mix in, shards
out). Reported: rows/s, the batch-size distribution, the gather wait, and the ceiling (every batch full);
the naive baseline (max-batch 1: one request at a time) runs in the same invocation on `--baseline-rows`.

Measured with the defaults on the 2-core dev box (load ~5, so the client's turnaround is slow; ceiling 130):
  max-batch 1: 0.6-0.7 rows/s.
  before (20 ms window then 2 ms between requests, answers re-decoded per token): 52.6 rows/s, 8 batches,
    sizes 7 / 505 / 7 / 462 / 50 / 462 / 50 / 457: the first batch closed with 7 of 512 requests in, then
    a batch and the requests that arrived while it ran took turns.
  server fixed (quiet window and wait sized on the last batch's run, one decode per answer): 67.6 rows/s,
    6 batches, sizes 278 / 512 / 168 / 512 / 24 / 506; the client still queued requests inside full lanes
    (round-robin over lanes of 8 connections): with --connections-per-lane 64, 87.2 rows/s, 5 batches.
  and client fixed (least-loaded lane): 106.5 rows/s, 4 batches, sizes 512 / 512 / 512 / 464 (the tail);
    what remains to the ceiling is the ~0.8 s the client on this box takes to send 512 requests again.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

console = Console(width=130)


# -- the server process -------------------------------------------------------------------------------
def _fake_gpu(engine: Any, step_s: float, gil: float) -> None:
    """Replace the engine's generation by a fake GPU: `step_s` a step whatever the batch, real token ids."""
    from pipeline.servers.devserver.engine import Generation

    text = "A draft model proposes tokens and the target verifies them in one pass. " * 40
    answer = engine.tokenizer(text, add_special_tokens=False)["input_ids"]

    def length(prompt: list[int], budget: int) -> int:  # rows end at different steps, as real answers do
        return max(1, budget // 2 + sum(prompt) % (budget // 2 + 1))

    def steps(n: int) -> None:
        for _ in range(n):
            end = time.perf_counter() + step_s * gil
            while time.perf_counter() < end:  # Python work: holds the GIL (switched out every 5 ms)
                pass
            time.sleep(step_s * (1 - gil))  # the device's part: the GIL is free

    def generate_batch(prompts: list[list[int]], budgets: list[int], params: Any) -> list[Generation]:
        ends = [length(p, b) for p, b in zip(prompts, budgets)]
        steps(max(ends))
        out = []
        for n, budget in zip(ends, budgets):
            stop = n < budget
            row = answer[: n - 1] + [engine.eos_id] if stop else answer[:n]
            out.append(Generation(row, "stop" if stop else "length"))
        return out

    def generate(
        prompt_ids: list[int], params: Any, on_token: Any, cancelled: Any = None, logits_processor: Any = None
    ) -> Generation:
        budget = engine.max_new_tokens(len(prompt_ids), params.max_tokens)
        gen = generate_batch([prompt_ids], [budget], params)[0]
        for token in gen.completion_ids:
            on_token(token)
        return gen

    engine.generate_batch = generate_batch
    engine.generate = generate


def serve(model_dir: Path, max_batch: int, step_s: float, gil: float) -> None:
    """Child: serve the fake-GPU dev server, print its URL, and on a line on stdin print the batches as JSON."""
    import uvicorn

    from pipeline.servers.devserver.app import create_app
    from pipeline.servers.devserver.engine import Engine
    from pipeline.servers.http import LOOPBACK, start_in_thread

    engine = Engine(model_dir, max_batch=max_batch)
    engine.max_positions = 8192  # the toy's 512 positions would clamp the budget below the bench's max_tokens
    _fake_gpu(engine, step_s, gil)
    app = create_app(engine)
    running = start_in_thread(
        lambda: uvicorn.Server(uvicorn.Config(app, host=LOOPBACK, port=0, log_level="warning", access_log=False)),
        LOOPBACK,
        0,
        name="bench dev server",
    )
    print(running.url, flush=True)
    sys.stdin.readline()
    batcher = app.state.batcher
    stats = [vars(s) for s in batcher.log.history()] if batcher else []
    print(json.dumps(stats), flush=True)


# -- the client (this process) ------------------------------------------------------------------------
def _run(model_dir: Path, home: Path, mix: str, rows: int, concurrency: int, max_batch: int, a: Any) -> dict:
    from eval.bench.bench_regen import one_partition, write_mix
    from pipeline.regenerate.run import run_regenerate

    write_mix(home, mix, rows)
    args = [sys.executable, "-m", "eval.bench.bench_devserver_batching", "--serve", str(model_dir)]
    args += ["--max-batch", str(max_batch), "--step-ms", str(a.step_ms), "--gil", str(a.gil)]
    child = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdin is not None
        url = child.stdout.readline().strip()
        config = one_partition(
            mix, url, concurrency, a.max_tokens, temperature=0, thinking=False, include_length_truncated=True,
            connections_per_lane=a.connections_per_lane,
        )  # fmt: skip
        started = time.perf_counter()
        result = run_regenerate(config, home, None, show_progress=False)
        wall = time.perf_counter() - started
        child.stdin.write("dump\n")
        child.stdin.flush()
        batches = json.loads(child.stdout.readline())
    finally:
        child.kill()
        child.wait()
    assert result.totals["results"] == rows, result.totals  # every prompt answered, none lost
    return {"rows": rows, "wall": wall, "batches": batches}


def _row(label: str, run: dict, max_batch: int, step_s: float, max_tokens: int) -> list[str]:
    sizes = [b["size"] for b in run["batches"]] or [1] * run["rows"]
    waits = [b["wait_s"] for b in run["batches"]]
    # the ceiling: every batch full and max_tokens steps long (the longest a row can run)
    ceiling = run["rows"] / (math.ceil(run["rows"] / max_batch) * max_tokens * step_s)
    deciles = statistics.quantiles(sizes, n=10, method="inclusive") if len(sizes) > 1 else [sizes[0]] * 9
    return [
        label,
        f"{run['rows']:,}",
        f"{run['rows'] / run['wall']:,.1f}",
        f"{ceiling:,.0f}" if max_batch > 1 else "-",
        f"{len(sizes):,}",
        f"{statistics.fmean(sizes):.1f}",
        f"{deciles[0]:g} / {statistics.median(sizes):g} / {deciles[-1]:g} / {max(sizes)}",
        f"{statistics.fmean(waits) * 1000:.0f}" if waits else "-",
    ]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=2000)
    p.add_argument("--baseline-rows", type=int, default=4, help="prompts for the max-batch 1 baseline")
    p.add_argument("--concurrency", type=int, default=512)
    p.add_argument("--max-batch", type=int, default=512)
    p.add_argument("--max-tokens", type=int, default=192)
    p.add_argument("--step-ms", type=float, default=20.0, help="fake GPU time a decoding step, any batch size")
    p.add_argument("--gil", type=float, default=0.5, help="share of a step spent holding the GIL")
    p.add_argument("--connections-per-lane", type=int, default=8, help="the regenerate client's pools")
    p.add_argument("--show-batches", action="store_true", help="print every batch of the batched run")
    p.add_argument("--serve", type=Path, help=argparse.SUPPRESS)  # the child process
    a = p.parse_args()
    step_s = a.step_ms / 1000
    if a.serve:
        serve(a.serve, a.max_batch, step_s, a.gil)
        return

    from pipeline.model.toy import ToyConfig, init_toy

    with tempfile.TemporaryDirectory() as tmp:
        model_dir = Path(tmp) / "toy-target"
        init_toy(model_dir, ToyConfig(train_steps=4, batch_size=4, seed=0), hub_dir=Path(tmp) / "no-corpus")
        home = Path(tmp) / "home"
        naive = _run(model_dir, home, "naive", a.baseline_rows, a.concurrency, 1, a)
        batched = _run(model_dir, home, "batched", a.rows, a.concurrency, a.max_batch, a)

    table = Table(
        title=f"regenerate --concurrency {a.concurrency} -> serve-dev (fake GPU {a.step_ms:g} ms a step, "
        f"{a.gil:.0%} of it holding the GIL), max_tokens {a.max_tokens}"
    )
    for col in ("server", "rows", "rows/s", "ceiling rows/s", "batches", "mean size", "size p10/p50/p90/max"):
        table.add_column(col, justify="right")
    table.add_column("gather wait ms", justify="right")
    table.add_row(*_row("max-batch 1 (naive)", naive, 1, step_s, a.max_tokens))
    table.add_row(*_row(f"max-batch {a.max_batch}", batched, a.max_batch, step_s, a.max_tokens))
    console.print(table)
    if a.show_batches:
        for b in batched["batches"]:
            console.print(
                f"size {b['size']:5d}  wait {b['wait_s']:.3f} s  gather {b['gather_s']:.3f} s  "
                f"run {b['run_s']:.3f} s  {b['tokens']} tokens"
            )


if __name__ == "__main__":
    main()
