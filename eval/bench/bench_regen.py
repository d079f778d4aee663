"""Regeneration client benchmark: is the client ever the bottleneck?

    .venv/bin/python -m eval.bench.bench_regen [--requests 5000] [--repeats 3] [--memory-rows 100000]

Against the instant-reply server (tests/kits/fake_openai.py) in a SEPARATE process, at concurrency 150:
sustained requests/s and client CPU per request (process_time of the client / requests) for
  - naive: the sync openai client in a ThreadPoolExecutor(150), as SpecForge's regenerator does,
  - one AsyncOpenAI client with a single 150-connection pool,
  - draftset's EndpointPool (several small connection pools, own retries),
  - the whole `regenerate` stage (parquet in, accounting, shards out),
then peak memory (ru_maxrss) of the stage on a 100,000-prompt mix vs loading the whole mix. Medians.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import httpx2
import openai
import pyarrow as pa
import pyarrow.parquet as pq
from openai.types.chat import ChatCompletionMessageParam
from rich.console import Console
from rich.table import Table

from adapters.records import Conversation, Message, Source, record_id
from catalog.home import Home
from pipeline.regenerate.client import EndpointPool
from pipeline.regenerate.config import RegenConfig, RetryPolicy
from pipeline.regenerate.run import run_regenerate
from pipeline.rows.codec import from_row, to_row

CONCURRENCY = 150
console = Console(width=130)  # full row labels even when piped to a file


def _prompt(i: int) -> str:
    return f"prompt {i}: explain how a hash map resizes"


def _messages(i: int) -> list[dict[str, Any]]:
    return [{"role": "user", "content": _prompt(i)}]


def _typed_messages(i: int) -> list[ChatCompletionMessageParam]:
    """The same messages, as the openai client's typed `create` takes them."""
    return [{"role": "user", "content": _prompt(i)}]


def start_server(port: int) -> subprocess.Popen:
    server = subprocess.Popen([sys.executable, "-m", "tests.kits.fake_openai", "--port", str(port)])
    for _ in range(200):
        try:
            httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1).raise_for_status()
            return server
        except httpx.HTTPError:
            time.sleep(0.05)
    server.kill()
    raise RuntimeError("fake server did not start")


def write_mix(home: Path, name: str, n: int, batch: int = 10_000) -> None:
    out = Home(home).mix(name)
    out.mkdir(parents=True, exist_ok=True)
    for part, start in enumerate(range(0, n, batch)):
        rows = [
            to_row(
                Conversation(
                    id=record_id("bench/mix", "default", "train", i),
                    source=Source(repo_id="bench/mix", revision="0" * 40, config="default", split="train", row_index=i),
                    category="general",
                    mode="regenerate",
                    messages=[
                        Message(role="user", content=_prompt(i)),
                        Message(role="assistant", content="an original answer that is dropped " * 20),
                    ],
                )
            )
            for i in range(start, min(n, start + batch))
        ]
        pq.write_table(pa.Table.from_pylist(rows), out / f"part-{part:05d}.parquet")


def _measure(fn: Callable[[], object], n: int) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return n / wall, cpu / n * 1000


def naive_threads(url: str, n: int) -> None:
    client = openai.OpenAI(base_url=url + "/v1", api_key="EMPTY", max_retries=0)
    with ThreadPoolExecutor(CONCURRENCY) as pool:
        list(
            pool.map(
                lambda i: client.chat.completions.create(model="m", messages=_typed_messages(i), max_tokens=16),
                range(n),
            )
        )


async def _gated(send: Callable[[int], Awaitable[object]], n: int) -> None:
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(i: int) -> None:
        async with gate:
            await send(i)

    await asyncio.gather(*(one(i) for i in range(n)))


def single_async_client(url: str, n: int) -> None:
    async def main() -> None:
        limits = httpx2.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
        client = openai.AsyncOpenAI(
            base_url=url + "/v1",
            api_key="EMPTY",
            max_retries=0,
            http_client=openai.DefaultAsyncHttpxClient(limits=limits),
        )
        await _gated(lambda i: client.chat.completions.create(model="m", messages=_typed_messages(i), max_tokens=16), n)
        await client.close()

    asyncio.run(main())


def endpoint_pool(url: str, n: int) -> None:
    async def main() -> None:
        pool = EndpointPool([url], api_key="EMPTY", retry=RetryPolicy(), max_inflight=CONCURRENCY)
        await _gated(lambda i: pool.chat(_messages(i), {"model": "m", "max_tokens": 16}), n)
        await pool.aclose()

    asyncio.run(main())


def one_partition(mix: str, url: str, concurrency: int, max_tokens: int, **settings: Any) -> RegenConfig:
    """A regenerate config with one partition for every prompt (the benches' shape), plus `settings`."""
    partition = {"name": "all", "max_prompt": None, "concurrency": concurrency, "max_tokens": max_tokens}
    return RegenConfig.model_validate({"mix": mix, "endpoints": [url], "partitions": [partition], **settings})


def whole_stage(url: str, n: int, home: Path, name: str) -> None:
    result = run_regenerate(one_partition(name, url, CONCURRENCY, 16), home, None, show_progress=False)
    assert result.totals["results"] == n, result.totals


def _child_peak(args: list[str]) -> tuple[float, float]:
    """(peak RSS MiB, seconds) of a fresh process running this module with `args` (ru_maxrss is per process)."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "eval.bench.bench_regen", *args], check=True, capture_output=True, text=True
    )
    return float(done.stdout.strip().splitlines()[-1]), time.perf_counter() - started


def _child(kind: str, url: str, home: Path, rows: int) -> None:
    if kind == "stage":
        whole_stage(url, rows, home, "big")
    else:  # the naive way: the whole mix and every conversation in memory at once
        table = [r for p in sorted((home / "data/mix/big").glob("*.parquet")) for r in pq.read_table(p).to_pylist()]
        held = [from_row(r) for r in table]
        assert len(held) == rows
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)  # KiB on Linux -> MiB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--memory-rows", type=int, default=100_000)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--child", nargs=3, metavar=("KIND", "URL", "HOME"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], args.child[1], Path(args.child[2]), args.memory_rows)
        return

    server = start_server(args.port)
    url, n = f"http://127.0.0.1:{args.port}", args.requests
    try:
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp)
            for r in range(args.repeats):
                write_mix(home, f"t{r}", n)
            cases = {
                "naive: sync openai + ThreadPoolExecutor(150)": lambda r: naive_threads(url, n),
                "one AsyncOpenAI, one 150-connection pool": lambda r: single_async_client(url, n),
                "draftset EndpointPool (client only)": lambda r: endpoint_pool(url, n),
                "draftset regenerate stage (parquet in/out)": lambda r: whole_stage(url, n, home, f"t{r}"),
            }
            table = Table(
                title=f"regeneration client, concurrency {CONCURRENCY}, {n} requests, "
                f"median of {args.repeats} (server in a separate process)"
            )
            for col in ("client", "req/s", "client CPU ms/request", "CPU-bound ceiling req/s (1 core)"):
                table.add_column(col)
            endpoint_pool(url, 500)  # warm the server up
            for label, case in cases.items():
                runs = [_measure(lambda: case(r), n) for r in range(args.repeats)]
                cpu_ms = statistics.median(x[1] for x in runs)
                table.add_row(
                    label, f"{statistics.median(x[0] for x in runs):.0f}", f"{cpu_ms:.2f}", f"{1000 / cpu_ms:.0f}"
                )
            console.print(table)
            # req/s is wall-clock and shares 2 cores with the server (and whatever else runs):
            console.print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

            write_mix(home, "big", args.memory_rows)
            child = ["--memory-rows", str(args.memory_rows), "--child"]
            naive_mib, naive_s = _child_peak([*child, "naive", url, tmp])
            stage_mib, stage_s = _child_peak([*child, "stage", url, tmp])
            memory = Table(title=f"peak memory (ru_maxrss) for {args.memory_rows:,} prompts")
            for col in ("process", "peak RSS MiB", "wall s"):
                memory.add_column(col)
            memory.add_row(
                "naive: whole mix + conversations in memory (no requests)", f"{naive_mib:.0f}", f"{naive_s:.0f}"
            )
            memory.add_row("draftset regenerate stage (streaming, all requests)", f"{stage_mib:.0f}", f"{stage_s:.0f}")
            console.print(memory)
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
