"""Static against continuous batching in serve-dev, behind the whole regenerate stage (issue 29).

    .venv/bin/python -m eval.bench.bench_devserver_continuous [--rows 256] [--concurrency 64] [--max-batch 32]

Each run starts the real `draftset serve-dev MODEL --max-batch N --batching static|continuous` in its own process
(as on the GPU host), runs `regenerate` (parquet mix in, shards out, greedy) against it, and stops it. The
model is the toy target, trained briefly (`--train-steps`, 20 by default) so that greedy answers end at
different lengths (3 to 27 tokens on the bench's prompts), as real answers do; with `--train-steps 4` no answer
ends before its budget. The modes alternate over `--repeats` rounds; reported: medians of rows/s and of
generated tokens/s, the ratio continuous / static, and whether both wrote the same answer for every id.
`--direct 32,128,512` times decoding steps of B requests without HTTP instead, the same prompts in each of
`--modes` (the default cache, the static cache compiled as transformers does on a GPU and uncompiled, continuous),
with each warm-up's seconds (a compile); `--profile` first prints the top operators of one default-cache batch.

On CPU a step costs in proportion to its rows, so what continuous batching saves here is the rows a static
batch keeps decoding after they ended, and the wait of requests that arrive while a batch runs. A GPU step
costs about the same for 1 row as for 4,096, so the GPU's gain (or loss) must be measured there: see
bench_devserver_continuous_notes.md.
"""

from __future__ import annotations

import argparse
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
MODES = ("static", "continuous")


def _serve(model_dir: Path, mode: str, a: Any, log: Path) -> tuple[subprocess.Popen, str]:
    from pipeline.servers.http import LOOPBACK, free_port, url_for, wait_http

    port = free_port()
    args = [sys.executable, "-m", "pipeline.cli.app", "serve-dev", str(model_dir), "--port", str(port)]
    args += ["--max-batch", str(a.max_batch), "--batching", mode, "--device", a.device, "--dtype", a.dtype]
    child = subprocess.Popen(args, stdout=log.open("w"), stderr=subprocess.STDOUT)
    url = url_for(LOOPBACK, port)
    try:
        wait_http(url + "/health", timeout_s=300)
    except BaseException:
        child.kill()
        raise
    return child, url + "/v1"


def _run(model_dir: Path, home: Path, mode: str, round_: int, a: Any) -> dict:
    import pyarrow.parquet as pq

    from eval.bench.bench_regen import one_partition, write_mix
    from pipeline.regenerate.run import run_regenerate
    from pipeline.regenerate.store import result_shards

    mix = f"{mode}-{round_}"
    write_mix(home, mix, a.rows)
    child, url = _serve(model_dir, mode, a, home / f"serve-{mix}.log")
    try:
        config = one_partition(
            mix, url, a.concurrency, a.max_tokens, temperature=0, thinking=False, include_length_truncated=True
        )
        started = time.perf_counter()
        result = run_regenerate(config, home, None, show_progress=False)
        wall = time.perf_counter() - started
    finally:
        child.terminate()
        child.wait(timeout=60)
    assert result.totals["results"] == a.rows, result.totals  # every prompt answered, none lost
    columns = ["id", "conversation", "completion_tokens", "finish_reason"]
    rows = [row for shard in result_shards(result.out_dir) for row in pq.read_table(shard, columns=columns).to_pylist()]
    answers = {r["id"]: r["conversation"] for r in rows}  # the canonical conversation JSON, answer included
    tokens = sum(r["completion_tokens"] or 0 for r in rows)
    stopped = sum(r["finish_reason"] == "stop" for r in rows)
    return {"wall": wall, "rows_s": a.rows / wall, "tokens_s": tokens / wall, "stop": stopped, "answers": answers}


def _direct(model_dir: Path, sizes: list[int], a: Any) -> None:
    """No HTTP: one static `generate_batch` of B prompts (default cache; the static cache with transformers' compiled
    step, as it does on a GPU; the static cache uncompiled) against the continuous batcher given the same B at once,
    every answer `--max-tokens` long (the toy of --train-steps 4 never stops): milliseconds a decoding step, best of
    3 after a warm-up whose own time (a compile, on a GPU) is shown beside it."""
    import asyncio

    from pipeline.servers.devserver.continuous import ContinuousBatcher
    from pipeline.servers.devserver.engine import Engine, KvCache, SamplingParams

    modes = a.modes.split(",")
    if unknown := [m for m in modes if m not in (*DIRECT_MODES, "continuous")]:
        raise SystemExit(f"--modes {','.join(unknown)}: each of {', '.join(DIRECT_MODES)}, continuous")
    table = Table(title=f"one step of B requests, {a.max_tokens} steps, no HTTP, on {a.device} (best of 3)")
    table.add_column("B", justify="right")
    for mode in modes:
        table.add_column(f"{mode} ms/step (warm-up s)", justify="right")
    greedy = SamplingParams(a.max_tokens, 0.0, 1.0, None)
    for size in sizes:
        engine = Engine(model_dir, device=a.device, dtype=a.dtype, max_batch=size, batching="continuous")
        prompts = [
            engine.render([{"role": "user", "content": f"prompt {i}: explain"}], None, False) for i in range(size)
        ]
        if a.profile and size == sizes[0]:
            _profile(engine, prompts, greedy, a)

        def timed(fn: Any) -> str:
            started = time.perf_counter()
            fn()  # warm-up (and, for the compiled static cache on a GPU, the compile)
            warm = time.perf_counter() - started
            best = math.inf
            for _ in range(3):
                started = time.perf_counter()
                fn()
                best = min(best, time.perf_counter() - started)
            return f"{best * 1000 / a.max_tokens:.1f} ({warm:.0f})"

        def static(cache: str, compiled: bool) -> str:
            engine.kv_cache = KvCache(cache)
            engine.model.generation_config.disable_compile = not compiled
            try:
                return timed(lambda: engine.generate_batch(prompts, [a.max_tokens] * size, greedy))
            finally:
                engine.kv_cache, engine.model.generation_config.disable_compile = KvCache.dynamic, False

        def run_mode(mode: str) -> str:
            if mode != "continuous":
                return static(*DIRECT_MODES[mode])
            continuous = ContinuousBatcher(engine, size)

            async def answer_all() -> list:
                return await asyncio.gather(*(continuous.submit(p, greedy) for p in prompts))

            try:
                return timed(lambda: asyncio.run(answer_all()))
            finally:
                continuous.stop()

        row = [str(size)]
        for mode in modes:
            try:
                row.append(run_mode(mode))
            except Exception as e:  # noqa: BLE001 - a mode that fails on this machine (no compiler, no memory) is a cell
                row.append(f"failed: {type(e).__name__}: {str(e)[:80]}")
        table.add_row(*row)
        console.print(table)  # each size as it is done: a call's limit may cut the next one


def _profile(engine: Any, prompts: list, greedy: Any, a: Any) -> None:
    """Where a default-cache static batch's time goes: the top operators of one `generate_batch` (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if a.device.startswith("cuda") else [])
    engine.generate_batch(prompts, [a.max_tokens] * len(prompts), greedy)  # warm-up
    with profile(activities=activities) as prof:
        engine.generate_batch(prompts, [a.max_tokens] * len(prompts), greedy)
    key = "self_cuda_time_total" if a.device.startswith("cuda") else "self_cpu_time_total"
    print(f"B={len(prompts)}, {a.max_tokens} steps, the default cache, by {key}:")
    print(prof.key_averages().table(sort_by=key, row_limit=15, max_name_column_width=60), flush=True)


# --direct's modes: name -> (KV cache, compiled step where transformers compiles one: a static cache on a GPU)
DIRECT_MODES = {"dynamic": ("dynamic", False), "static-kv": ("static", True), "static-kv-eager": ("static", False)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=256)
    p.add_argument("--concurrency", type=int, default=64, help="regenerate's requests in flight")
    p.add_argument("--max-batch", type=int, default=32, help="serve-dev --max-batch (both modes)")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--repeats", type=int, default=3, help="rounds; each runs both modes, alternating")
    p.add_argument("--train-steps", type=int, default=20, help="the toy's training (20: answers of 3-27 tokens)")
    p.add_argument("--model", type=Path, help="serve this model dir instead of a freshly built toy")
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--direct", help="B1,B2,...: time decoding steps without HTTP instead (see _direct)")
    p.add_argument(
        "--modes", default="dynamic,static-kv,static-kv-eager,continuous",
        help="--direct's columns: dynamic, static-kv (compiled on a GPU), static-kv-eager, continuous",
    )  # fmt: skip
    p.add_argument("--profile", action="store_true", help="--direct: profile the default cache's batch first")
    a = p.parse_args()

    from pipeline.model.toy import ToyConfig, init_toy

    runs: dict[str, list[dict]] = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = a.model
        if model_dir is None:
            model_dir = Path(tmp) / "toy-target"
            init_toy(model_dir, ToyConfig(train_steps=a.train_steps, seed=0), hub_dir=Path(tmp) / "no-corpus")
        if a.direct:
            _direct(model_dir, [int(b) for b in a.direct.split(",")], a)
            return
        home = Path(tmp) / "home"
        for r in range(a.repeats):
            for mode in MODES if r % 2 == 0 else MODES[::-1]:  # alternate: neither always runs on a warmer box
                runs[mode].append(_run(model_dir, home, mode, r, a))
                console.print(f"round {r + 1} {mode}: {runs[mode][-1]['rows_s']:.1f} rows/s")

    same = all(run["answers"] == runs["static"][0]["answers"] for m in MODES for run in runs[m])
    table = Table(
        title=f"regenerate --concurrency {a.concurrency} --max-tokens {a.max_tokens} (greedy) -> serve-dev "
        f"--max-batch {a.max_batch} on {a.device}, {a.rows} rows, medians of {a.repeats}"
    )
    for col in ("batching", "rows/s", "tokens/s", "rows/s each round", "answers ending on stop"):
        table.add_column(col, justify="right")
    median = {m: statistics.median(run["rows_s"] for run in runs[m]) for m in MODES}
    for m in MODES:
        table.add_row(
            m,
            f"{median[m]:.1f}",
            f"{statistics.median(run['tokens_s'] for run in runs[m]):,.0f}",
            " / ".join(f"{run['rows_s']:.1f}" for run in runs[m]),
            f"{runs[m][0]['stop']} of {a.rows}",
        )
    console.print(table)
    console.print(
        f"continuous / static: {median['continuous'] / median['static']:.2f}x rows/s; "
        f"the same answer for every id in every run: {same}"
    )


if __name__ == "__main__":
    main()
