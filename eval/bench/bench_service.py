"""Benchmark the team service: 50 concurrent API readers (SQL, adapter list, candidates, adapter previews)
while find jobs run back to back, against a naive baseline in the same run.

- draftset: `draftset serve` as its own process owns the catalog; find runs inside it as a job; 50 readers
  call the HTTP API with bearer tokens (asyncio + httpx, one connection each).
- naive: no service. `draftset find` runs as a CLI process (it opens the catalog per write) and 50 reader
  threads do the same reads the CLI way, opening the catalog read-only per request (`Catalog.query`);
  previews read the adapter and apply it to the same rows, without the service's cache.

Both phases read for the same wall time on the same home, with a find running throughout. Latency is
per request, from send to the last byte; an error is a non-200 answer or an exception (CatalogBusy
included). The local Hub runs as its own process.

    .venv/bin/python -m eval.bench.bench_service [--seconds 10] [--readers 50]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

from eval.bench.bench_hub import server
from pipeline.servers.http import free_port

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_HUB = ROOT / "tests" / "fixtures" / "hub"
SQL = "SELECT repo_id, category, score, status FROM candidates ORDER BY score DESC LIMIT 50"
KINDS = ("sql", "adapters", "candidates", "preview")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


class Tally:
    def __init__(self) -> None:
        self.ms: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, int] = defaultdict(int)
        self.first_error: str | None = None
        self._lock = threading.Lock()

    def add(self, kind: str, started: float, error: str | None = None) -> None:
        with self._lock:
            self.ms[kind].append((time.perf_counter() - started) * 1000)
            if error:
                self.errors[kind] += 1
                self.first_error = self.first_error or f"{kind}: {error}"[:160]


def _schedule(i: int, stop: float) -> Iterator[tuple[str, int]]:
    """Reader i's requests until `stop`: (kind, n), the kinds in turn starting at the i-th; n picks the repo."""
    n = i
    while time.monotonic() < stop:
        kind, n = KINDS[n % len(KINDS)], n + 1
        yield kind, n


# -- draftset: the service ---------------------------------------------------------------------------
async def _service_readers(url: str, token: str, repos: list[str], readers: int, seconds: float, think: float) -> Tally:
    tally = Tally()
    # One client with a connection per reader: 50 clients would each build an SSL context (tens of ms of
    # CPU apiece) and measure that instead of the service.
    client = httpx.AsyncClient(
        base_url=url,
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
        limits=httpx.Limits(max_connections=readers, max_keepalive_connections=readers),
    )
    await client.get("/health")
    stop = time.monotonic() + seconds

    async def reader(i: int) -> None:
        await asyncio.sleep(think * i / readers)  # readers start spread over one think time
        for kind, n in _schedule(i, stop):
            started = time.perf_counter()
            try:
                if kind == "sql":
                    resp = await client.post("/api/sql", json={"query": SQL, "limit": 50})
                elif kind == "adapters":
                    resp = await client.get("/api/adapters")
                elif kind == "candidates":
                    resp = await client.get("/api/candidates", params={"limit": 50})
                else:
                    resp = await client.get(f"/api/adapters/{repos[n % len(repos)]}", params={"rows": 3})
                tally.add(kind, started, None if resp.status_code == 200 else f"HTTP {resp.status_code} {resp.text}")
            except httpx.HTTPError as exc:
                tally.add(kind, started, repr(exc))
            await asyncio.sleep(think)

    await asyncio.gather(*(reader(i) for i in range(readers)))
    await client.aclose()
    return tally


def run_service(home: Path, readers: int, seconds: float, think: float) -> tuple[Tally, int]:
    from catalog import Catalog
    from pipeline.servers.service.users import add_user

    token = add_user(Catalog(home), "bench", "operator")
    port = free_port()
    with server([sys.executable, "-m", "pipeline.cli.app", "serve", "--port", str(port)], port) as url:
        api = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
        repos = [a["repo_id"] for a in api.get("/api/adapters").json()]
        for repo in repos:  # the previews' first read of the files, as a reviewer's first visit would
            api.get(f"/api/adapters/{repo}", params={"rows": 3})
        finds, stop = [0], threading.Event()

        def keep_finding() -> None:
            while not stop.is_set():
                job = api.post("/api/find", json={"domain": "agentic coding", "samples": 1000, "propose": 0}).json()
                while api.get(f"/api/jobs/{job['job_id']}").json()["status"] in ("queued", "running"):
                    time.sleep(0.2)
                finds[0] += 1

        finder = threading.Thread(target=keep_finding, daemon=True)
        finder.start()
        time.sleep(0.5)  # the find is under way before the readers start
        tally = asyncio.run(_service_readers(url, token, repos, readers, seconds, think))
        stop.set()
        finder.join(timeout=120)
    return tally, finds[0]


# -- naive: no service, the CLI's open-per-request reads -------------------------------------------------
def run_naive(home: Path, readers: int, seconds: float, think: float) -> tuple[Tally, int]:
    from adapters.map.apply import apply_row
    from adapters.read.source import iter_raw_rows
    from adapters.review import store
    from catalog import Catalog

    cat, tally, stop = Catalog(home), Tally(), time.monotonic() + seconds
    endpoint = os.environ["HF_ENDPOINT"]
    repos = [r.repo_id for r in store.list_all(cat)]

    def reader(i: int) -> None:
        time.sleep(think * i / readers)
        for kind, n in _schedule(i, stop):
            started = time.perf_counter()
            try:
                if kind == "sql":
                    cat.query(SQL)
                elif kind == "adapters":
                    store.list_all(cat)
                elif kind == "candidates":
                    cat.query("SELECT * FROM candidates ORDER BY score DESC LIMIT 50")
                else:
                    record = store.require(cat, repos[n % len(repos)])
                    for raw in iter_raw_rows(record.spec, endpoint=endpoint, limit=3):
                        apply_row(record.spec, raw.row_index, raw.row)
                tally.add(kind, started)
            except Exception as exc:  # CatalogBusy above all: this is what the baseline measures
                tally.add(kind, started, f"{type(exc).__name__}: {exc}")
            time.sleep(think)

    finds = 0
    env = {**os.environ, "DRAFTSET_HOME": str(home)}
    with ThreadPoolExecutor(readers) as pool:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pipeline.cli.app",
                "find",
                "agentic coding",
                "--samples",
                "1000",
                "--propose",
                "0",
                "--json",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(2.5)  # CLI start-up (imports) before its first catalog write
        futures = [pool.submit(reader, i) for i in range(readers)]
        for f in futures:
            f.result()
        finds = int(proc.wait(timeout=300) == 0)
    return tally, finds


def _seed(home: Path) -> None:
    """One find run with adapters proposed for its top 4 planned datasets (the data both phases read)."""
    env = {**os.environ, "DRAFTSET_HOME": str(home)}
    subprocess.run(
        [sys.executable, "-m", "pipeline.cli.app", "find", "agentic coding", "--samples", "1000", "--propose", "4"],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        timeout=600,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--readers", type=int, default=50)
    parser.add_argument(
        "--think", type=float, default=0.5, help="seconds each reader waits between requests (0: as fast as it can)"
    )
    args = parser.parse_args()
    console = Console(width=150)
    hub_port = free_port()
    hub_cmd = [
        sys.executable,
        "-m",
        "pipeline.cli.app",
        "hub",
        "serve",
        str(FIXTURE_HUB),
        "--port",
        str(hub_port),
        "--quiet",
    ]
    with tempfile.TemporaryDirectory(prefix="bench-service-") as tmp, server(hub_cmd, hub_port) as hub:
        os.environ.update(HF_ENDPOINT=hub, DRAFTSET_VIEWER_URL=hub + "/viewer", HF_HOME=str(Path(tmp) / "hf"))
        home = Path(tmp) / "home"
        os.environ["DRAFTSET_HOME"] = str(home)
        _seed(home)
        results = {
            "draftset service": run_service(home, args.readers, args.seconds, args.think),
            "naive (no service)": run_naive(home, args.readers, args.seconds, args.think),
        }
    table = Table(
        title=f"{args.readers} concurrent readers, {args.think} s between requests, for "
        f"{args.seconds:.0f} s while find runs ({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})"
    )
    for col in ("variant", "kind", "requests", "req/s", "p50 ms", "p99 ms", "errors", "finds done"):
        table.add_column(col)
    for variant, (tally, finds) in results.items():
        everything = [ms for kind in KINDS for ms in tally.ms[kind]]
        groups = [(k, tally.ms[k], tally.errors[k]) for k in KINDS]
        catalog = [ms for k in ("sql", "adapters", "candidates") for ms in tally.ms[k]]
        groups += [
            ("catalog reads", catalog, sum(tally.errors[k] for k in KINDS if k != "preview")),
            ("all", everything, sum(tally.errors.values())),
        ]
        for kind, values, errors in groups:
            table.add_row(
                variant,
                kind,
                str(len(values)),
                f"{len(values) / args.seconds:.0f}",
                f"{_pct(values, 0.5):.1f}",
                f"{_pct(values, 0.99):.1f}",
                str(errors),
                str(finds),
            )
        if tally.first_error:
            console.print(f"{variant}: first error: {tally.first_error}", highlight=False)
    console.print(table)


if __name__ == "__main__":
    main()
