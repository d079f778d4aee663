"""Benchmark `find`: wall time and Hub requests over the fixture Hub and a generated Hub of 2,000
repos, first run vs second run (per-revision cache), against a naive baseline in the same run (agents
one at a time, no cache). The local Hub runs as its own process (`draftset hub serve`) so the server
does not share this process's GIL; the graph runs in-process (CLI start-up, ~2-3 s of imports, is
left out) through `agents.run.run_find`, the code `draftset find` calls. Variants alternate within
each repeat so neither gets a warmer server.

    .venv/bin/python -m eval.bench.bench_find [--repeats 3] [--repos 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from agents.configuration import FindConfig
from eval.bench.bench_hub import local_hub
from eval.bench.find_hubgen import generate

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_HUB = ROOT / "tests" / "fixtures" / "hub"
VARIANTS = {
    "draftset (10 concurrent, cache)": FindConfig(),
    "naive (sequential, no cache)": FindConfig(max_concurrency=1, cache=False),
}


def _find(url: str, home: Path, config: FindConfig) -> tuple[float, int]:
    from agents.run import FindEnv, FindRequest, run_find  # after HF_HOME is set: read at import

    env = FindEnv(home=home, endpoint=url, viewer_base=url + "/viewer")
    t0 = time.perf_counter()
    final = asyncio.run(run_find(env, FindRequest("agentic coding", 100_000, config)))
    return time.perf_counter() - t0, final["state"]["summary"]["hub_calls"]


def bench_hub(name: str, folder: Path, repeats: int, tmp: Path) -> list[tuple]:
    samples: dict[tuple[str, str], list[tuple[float, int]]] = {}
    with local_hub(folder)() as url:
        _find(url, tmp / f"warmup-{name}", FindConfig())  # the server's first scan of the folder
        for r in range(repeats):
            for v, (variant, config) in enumerate(VARIANTS.items()):
                home = tmp / f"{name}-{v}-{r}"
                for run in ("first", "second"):
                    samples.setdefault((variant, run), []).append(_find(url, home, config))
    return [
        (name, variant, run, statistics.median(x[0] for x in values), statistics.median(x[1] for x in values))
        for (variant, run), values in samples.items()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--repos", type=int, default=2000)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-find-") as tmp_:
        tmp = Path(tmp_)
        os.environ["HF_HOME"] = str(tmp / "hf")  # keep the user's HF cache out of the measurement
        if FIXTURE_HUB.exists():
            rows += bench_hub("fixture Hub", FIXTURE_HUB, args.repeats, tmp)
        generated = tmp / "generated-hub"
        generate(generated, args.repos)
        rows += bench_hub(f"generated Hub ({args.repos:,} repos)", generated, args.repeats, tmp)
    table = Table(title=f'draftset find "agentic coding" — medians of {args.repeats} runs', header_style="bold")
    for col in ("hub", "variant", "run", "wall s", "Hub requests"):
        table.add_column(col)
    for hub, variant, run, wall, calls in rows:
        table.add_row(hub, variant, run, f"{wall:.2f}", f"{calls:.0f}")
    Console().print(table)


if __name__ == "__main__":
    main()
