"""Local Hub throughput with 1,000 generated repos: `python -m eval.bench.bench_hub [--repos N]`.

Servers run as separate processes (`draftset hub serve`), as users run them, and are driven by the real
huggingface_hub client. Baselines in the same run:
- listing: the same server with its per-repo scan cache off (`--no-cache`: every request re-reads and
  re-hashes every repo), i.e. what a server without the cache would cost;
- downloads: Python's stdlib static file server (`python -m http.server`) on the same folder.
Each figure is the median requests/second over several runs.
"""

from __future__ import annotations

import argparse
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import IO

from rich.console import Console
from rich.progress import track
from rich.table import Table

from pipeline.servers.http import free_port
from pipeline.servers.localhub.write import write_repo

LICENSES = ["mit", "apache-2.0", "cc-by-4.0", "cc-by-sa-4.0"]
TASKS = ["text-generation", "question-answering", "summarization", "translation"]
WORDS = ["chat", "code", "math", "agent", "tool", "reasoning", "essay", "review", "support", "trajectory"]


def make_repos(root: Path, n: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    for i in track(range(n), description=f"writing {n} repos"):
        topic = rng.choice(WORDS)
        card = {
            "license": rng.choice(LICENSES),
            "task_categories": [rng.choice(TASKS)],
            "language": ["en"],
            "pretty_name": f"{topic} set {i}",
            "tags": [topic],
            "x_downloads": rng.randint(0, 100_000),
            "x_likes": rng.randint(0, 500),
        }
        rows = [
            {
                "messages": [
                    {"role": "user", "content": f"{topic} question {i}.{j}"},
                    {"role": "assistant", "content": f"answer {j} " * rng.randint(5, 40)},
                ]
            }
            for j in range(20)
        ]
        ext = "parquet" if i % 2 else "jsonl"
        write_repo(
            root,
            f"org-{i % 50}/{topic}-{i}",
            card,
            {f"data/train.{ext}": rows},
            body=f"# {topic} set {i}\n\nSynthetic {topic} conversations for benchmarking.",
        )


def _wait_listening(port: int, proc: subprocess.Popen, log: IO[str], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"server exited early: {log.read()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listening on port {port} after {timeout}s")


@contextmanager
def server(args: list[str], port: int) -> Iterator[str]:
    # stderr to a file, not a pipe: http.server logs every request and would block on a full pipe.
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log, text=True)
        try:
            _wait_listening(port, proc, log)
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def local_hub(root: Path, *extra: str) -> Callable[[], AbstractContextManager[str]]:
    port = free_port()
    return lambda: server(
        [sys.executable, "-m", "pipeline.cli.app", "hub", "serve", str(root), "--port", str(port), "--quiet", *extra],
        port,
    )


def rate(fn: Callable[[int], object], requests: int, runs: int) -> float:
    """Median requests/second over `runs` runs of `requests` sequential calls."""
    rates = []
    for _ in range(runs):
        started = time.perf_counter()
        for i in range(requests):
            fn(i)
        rates.append(requests / (time.perf_counter() - started))
    return statistics.median(rates)


def getter() -> Callable[[str], bytes]:
    """GET through one shared client: keep-alive where the server offers it (the stdlib server speaks
    HTTP/1.0 and closes each connection); a client per call would measure TLS-context setup instead."""
    import httpx

    client = httpx.Client(timeout=30)

    def get(url: str) -> bytes:
        response = client.get(url)
        response.raise_for_status()
        return response.content

    return get


def list_ops(url: str) -> dict[str, Callable[[int], object]]:
    from huggingface_hub import HfApi

    api = HfApi(endpoint=url, token=False)
    return {
        "list_datasets(search, limit=50)": lambda i: list(api.list_datasets(search=f"org-{i % 50}/", limit=50)),
        "list_datasets(filter, sort, limit=20)": lambda i: list(
            api.list_datasets(filter=f"license:{LICENSES[i % 4]}", sort="downloads", limit=20)
        ),
        "list_datasets(full, limit=100)": lambda i: list(api.list_datasets(full=True, limit=100)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--requests", type=int, default=40, help="requests per run (the naive baseline: 2 x 3 runs)")
    opts = parser.parse_args()
    import httpx
    from huggingface_hub import hf_hub_download

    get = getter()

    rows: list[tuple[str, float, float | None, str]] = []
    with tempfile.TemporaryDirectory(prefix="bench-hub-") as tmp:
        root = Path(tmp) / "hub"
        make_repos(root, opts.repos)
        files = [f"{p.parent.parent.relative_to(root)}/data/{p.name}" for p in sorted(root.glob("*/*/data/*"))]
        repo_of = {f: f.rsplit("/data/", 1)[0] for f in files}

        with local_hub(root)() as url:
            started = time.perf_counter()
            httpx.get(url + "/api/datasets", params={"limit": 1}, timeout=600).raise_for_status()
            cold_s = time.perf_counter() - started  # first request scans (hashes) all repos
            cached = {name: rate(fn, opts.requests, opts.runs) for name, fn in list_ops(url).items()}
            cache = Path(tmp) / "hf-cache"

            def hub_download(i: int) -> object:
                f = files[i % len(files)]
                return hf_hub_download(
                    repo_of[f],
                    f.split("/", 2)[2],
                    repo_type="dataset",
                    endpoint=url,
                    cache_dir=cache,
                    force_download=True,
                    token=False,
                )

            dl = rate(hub_download, opts.requests, opts.runs)
            raw = rate(
                lambda i: get(
                    f"{url}/datasets/{repo_of[files[i % len(files)]]}/resolve/main/"
                    f"{files[i % len(files)].split('/', 2)[2]}"
                ),
                opts.requests * 5,
                opts.runs,
            )
        with local_hub(root, "--no-cache")() as url:
            # Each naive request re-reads all repos (seconds at 1,000): fewer requests, still a median.
            naive = {name: rate(fn, 2, 3) for name, fn in list_ops(url).items()}
        static_port = free_port()
        static_args = [
            sys.executable,
            "-m",
            "http.server",
            str(static_port),
            "--bind",
            "127.0.0.1",
            "--directory",
            str(root),
        ]
        with server(static_args, static_port) as static_url:
            static = rate(lambda i: get(f"{static_url}/{files[i % len(files)]}"), opts.requests * 5, opts.runs)

    for name in cached:
        rows.append((name, cached[name], naive[name], "same server, scan cache off"))
    rows.append(("hf_hub_download (force_download)", dl, None, "none: HEAD + GET + cache write"))
    rows.append(("raw GET resolve", raw, static, "stdlib http.server raw GET"))
    table = Table(title=f"local Hub, {opts.repos} repos, median of {opts.runs} runs (requests/s)")
    for col in ("operation", "local Hub", "baseline", "ratio", "baseline is"):
        table.add_column(col, justify="left" if col in ("operation", "baseline is") else "right")
    for name, ours, base, what in rows:
        table.add_row(
            name,
            f"{ours:,.1f}",
            "-" if base is None else f"{base:,.1f}",
            "-" if base is None else f"{ours / base:,.1f}x",
            what,
        )
    console = Console(width=max(120, Console().width))
    console.print(table)
    console.print(f"cold first listing (scan + hash all {opts.repos} repos): {cold_s:.2f} s")


if __name__ == "__main__":
    main()
