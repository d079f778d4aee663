"""Cost of one capped read (adapters/read/capped.py): a small parquet file decoded in a forkserver child.

    .venv/bin/python -m eval.bench.bench_capped_reads [--reads 10] [--runs 3]

Three ways in one run, each in its own interpreter (the forkserver is one per process), after a warm-up
read that starts the server: `in-process` (files.iter_file, no cap: the floor), `naive` (the forkserver
preloads only adapters.read.files, as before: each child imported `datasets` for its extension table and
re-ran `__main__`'s imports), `capped` (today's preload). A console-script-like `__main__` that imports
the CLI is used, as `draftset ingest` has. Medians of `--runs` runs, seconds per read and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FILE = sorted((ROOT / "tests" / "fixtures" / "hub").rglob("*.parquet"))[0]

# Run as the child interpreter's __main__ (a file, as the `draftset` script is), importing the CLI first.
CHILD = """
import json, sys, time
from pathlib import Path
from pipeline.cli.app import main  # what `draftset`'s script imports
from adapters.read import capped, files
from catalog import isolate


def run(mode, path, reads):
    if mode == "naive":
        capped._PRELOAD = ("adapters.read.files",)
        isolate._main_modules = lambda: []
    read = files.iter_file if mode == "in-process" else capped.iter_file
    n = sum(1 for _ in read(path, path.name))  # warm-up: starts the forkserver
    times = []
    for _ in range(reads):
        t = time.perf_counter()
        assert sum(1 for _ in read(path, path.name)) == n
        times.append(time.perf_counter() - t)
    print(json.dumps({"rows": n, "per_read": sorted(times)[len(times) // 2]}))


if __name__ == "__main__":
    run(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]))
"""


def one(mode: str, reads: int, script: Path) -> dict:
    out = subprocess.run(
        [sys.executable, str(script), mode, str(FILE), str(reads)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "child_main.py"
        script.write_text(CHILD)
        medians = {}
        for mode in ("in-process", "naive", "capped"):
            runs = [one(mode, args.reads, script) for _ in range(args.runs)]
            medians[mode] = statistics.median(r["per_read"] for r in runs)
            print(f"{mode:>10}: {medians[mode] * 1000:8.1f} ms per read ({runs[0]['rows']} rows, {FILE.name})")
        print(f"capped is {medians['naive'] / medians['capped']:.1f}x faster than naive per read")


if __name__ == "__main__":
    main()
