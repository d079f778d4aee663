"""Dedup at scale: the out-of-core stage vs today's in-memory index and `datasets.map` + datasketch, one run.

    nice .venv/bin/python -m eval.bench.bench_dedup [--rows 1000000] [--baseline-rows 100000] [--workers 1 2]

On a synthetic corpus (eval/bench/dedup_corpus.py: the fixture families' shapes, 10% planted near
duplicates) it runs, each in its own process so its peak memory is its own (the resident set of the
whole process tree, sampled every 50 ms):

- `stage`: `run_dedup` as the pipeline runs it (keys on W workers through datatrove's local executor,
  decision in DuckDB, decisions into a real catalog, quarantine), at --rows and at --baseline-rows;
- `in-memory`: the dedup before this change (pipeline/dedup/near.py's first-come MinHash LSH over all
  rows in one process, rows parsed, normalized and length-counted the same way), at --baseline-rows;
- `datasets+datasketch`: the usual notebook way, `Dataset.from_parquet` → `map` (normalize + MinHash,
  datasketch) → `MinHashLSH` query/insert, at --baseline-rows.

For each: wall seconds, CPU seconds of the whole process tree, CPU seconds of the near-dedup work alone
(MinHash, LSH and the decision, without parsing the canonical records: the stage reports it per phase) (from wait4: the machine is shared, so
rows per CPU-second is the per-core throughput that contention does not distort), peak RSS, recall and
precision of the planted duplicates. Medians over --repeats. The stage's figures are projected to
--project rows at its CPU-seconds per row (its memory is bounded; the table marks projections).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
from rich.console import Console
from rich.table import Table

from eval.bench.dedup_corpus import build, scores

BENCH_REPOS = ["synth/agentic", "synth/alpaca-like", "synth/native-chat", "synth/sharegpt-like"]


# -- the variants (run in a child process) -----------------------------------------------------------------
def run_stage(home: Path, workers: int) -> tuple[set[str], float]:
    import pyarrow.parquet as pq

    from catalog import Catalog
    from pipeline.dedup.config import DedupConfig
    from pipeline.dedup.run import run_dedup
    from pipeline.targets.lengths import TokenCounter

    counter = TokenCounter(None)
    config = DedupConfig(repos=BENCH_REPOS, length_unit=counter.method)
    out = Path(tempfile.mkdtemp(dir=home, prefix="dedup-"))
    result = run_dedup(Catalog(out), home, config, out / "dedup", counter, workers=workers)
    table = pq.read_table(result.decisions, columns=["record_id"], filters=[("kept", "=", False)])
    cpu = result.manifest["cpu_s"]
    return set(table.column("record_id").to_pylist()), cpu["minhash"] + cpu["decide"]


def _prompts(home: Path) -> list[tuple[tuple[Any, ...], str, str, str]]:
    """(survivor order, id, normalized prompt, context) of every row, as the pre-change stage loaded them."""
    from catalog.home import Home
    from catalog.shards import iter_rows
    from pipeline.rows.codec import from_row
    from pipeline.rows.keys import normalize

    rows = []
    for raw in iter_rows([Home(home).normalized(r) for r in BENCH_REPOS]):
        conv = from_row(raw)
        order = (raw["mode"] != "native", raw["repo_id"], raw["config"], raw["split"], raw["row_index"], raw["id"])
        rows.append((order, raw["id"], normalize(conv.prompt_text()), conv.context_text()))
    rows.sort(key=lambda r: r[0])
    return rows


def run_in_memory(home: Path, workers: int) -> tuple[set[str], float]:
    from pipeline.dedup.near import NearIndex
    from pipeline.rows.keys import hash_normalized
    from pipeline.targets.lengths import TokenCounter

    rows = _prompts(home)
    TokenCounter(None).count_many([r[3] for r in rows])
    t0 = time.process_time()  # the near-dedup work: normalize (in _prompts, not counted), MinHash, LSH
    index = NearIndex(0.8, 128, 2)
    sigs = index.signatures(r[2] for r in rows)
    first: dict[str, str] = {}
    dropped: set[str] = set()
    for (_, rid, norm, _), sig in zip(rows, sigs):
        h = hash_normalized(norm)
        if h in first or index.match_or_add(rid, sig) is not None:
            dropped.add(rid)
        else:
            first[h] = rid
    return dropped, time.process_time() - t0


def run_datasets(home: Path, workers: int) -> tuple[set[str], float | None]:
    import datasets
    import xxhash
    from datasketch import LeanMinHash, MinHash, MinHashLSH

    from catalog.home import Home
    from catalog.shards import shard_paths
    from pipeline.rows.codec import from_row
    from pipeline.rows.keys import normalize, shingles

    datasets.disable_progress_bars()
    files = [str(p) for r in BENCH_REPOS for p in shard_paths(Home(home).normalized(r))]
    # a fresh cache per run: a reused one would hand back the previous run's `map` without computing it
    ds = datasets.Dataset.from_parquet(files, cache_dir=tempfile.mkdtemp(dir=home, prefix="hf-cache-"))

    def sketch(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        out = []
        for rid, rep, conv in zip(batch["id"], batch["repo_id"], batch["conversation"]):
            text = normalize(from_row({"id": rid, "repo_id": rep, "conversation": conv}).prompt_text())
            m = MinHash(num_perm=128, hashfunc=xxhash.xxh32_intdigest)
            m.update_batch(list(shingles(text)))
            out.append(m.hashvalues.tolist())
        return {"sig": out}

    ds = ds.map(sketch, batched=True, batch_size=1_000, num_proc=workers if workers > 1 else None)
    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    sigs: dict[str, LeanMinHash] = {}
    dropped: set[str] = set()
    for rid, sig in zip(ds["id"], ds["sig"]):
        m = LeanMinHash(seed=1, hashvalues=sig, scheme="affine32")
        if any(m.jaccard(lsh_sig) >= 0.8 for lsh_sig in (sigs[c] for c in lsh.query(m))):
            dropped.add(rid)
        else:
            lsh.insert(rid, m)
            sigs[rid] = m
    return dropped, None  # parse, MinHash and LSH are interleaved in `map`: only the total is measured


VARIANTS = {"stage": run_stage, "in-memory": run_in_memory, "datasets+datasketch": run_datasets}


def child(variant: str, corpus: Path, workers: int) -> None:
    t0 = time.perf_counter()
    dropped, near_cpu = VARIANTS[variant](corpus, workers)
    seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": seconds, "near_cpu_s": near_cpu, **scores(corpus / "planted.json", dropped)}))


# -- the parent: corpus, children, table -------------------------------------------------------------------
def measure(variant: str, corpus: Path, workers: int) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "eval.bench.bench_dedup", "--child", variant, "--corpus", str(corpus)]
    cmd += ["--workers", str(workers)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[2])
    peak = 0
    tree = psutil.Process(proc.pid)
    status, usage = 0, None
    while usage is None:
        try:
            procs = [tree, *tree.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in procs if p.is_running()))
        except psutil.Error:
            pass
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            usage = ru  # CPU time of the child and every worker it waited for
        else:
            time.sleep(0.05)
    assert proc.stdout is not None
    out = proc.stdout.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{variant} failed (exit {os.waitstatus_to_exitcode(status)})")
    cpu = usage.ru_utime + usage.ru_stime
    result = json.loads(out.strip().splitlines()[-1])
    return {**result, "peak_mb": peak / 2**20, "cpu_s": cpu}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--baseline-rows", type=int, default=100_000)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--project", type=int, default=10_000_000, help="rows to project the stage's figures to")
    ap.add_argument("--corpus-root", type=Path, default=Path(tempfile.gettempdir()) / "draftset-bench-dedup")
    ap.add_argument("--child", choices=list(VARIANTS))
    ap.add_argument("--corpus", type=Path)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.corpus, args.workers[0])
        return
    console = Console(width=160)
    runs: list[tuple[str, int, int]] = [("stage", w, args.rows) for w in args.workers]
    runs += [("stage", 1, args.baseline_rows), ("in-memory", 1, args.baseline_rows)]
    runs += [("datasets+datasketch", 1, args.baseline_rows)]
    table = Table(title=f"dedup, {os.cpu_count()} cores shared (medians of {args.repeats})")
    cols = ["variant", "workers", "rows", "wall s", "CPU s", "rows/CPU-s", "near-dedup rows/CPU-s", "peak MB"]
    cols += ["recall", "precision"]
    for col in cols:
        table.add_column(col, justify="right" if col != "variant" else "left")
    cpu_per_row: dict[int, float] = {}
    for variant, workers, rows in runs:
        corpus = args.corpus_root / f"rows-{rows}"
        t = time.perf_counter()
        build(corpus, rows)
        console.print(f"corpus {rows:,} rows ready ({time.perf_counter() - t:.0f} s); running {variant} x{workers}")
        results = [measure(variant, corpus, workers) for _ in range(args.repeats)]
        keys = ("seconds", "cpu_s", "peak_mb", "recall", "precision")
        med = {k: statistics.median(r[k] for r in results) for k in keys}
        if variant == "stage" and rows == args.rows:
            cpu_per_row[workers] = med["cpu_s"] / rows
        table.add_row(
            variant,
            str(workers),
            f"{rows:,}",
            f"{med['seconds']:.1f}",
            f"{med['cpu_s']:.1f}",
            f"{rows / med['cpu_s']:,.0f}",
            "-"
            if not results[0]["near_cpu_s"]
            else f"{rows / statistics.median(r['near_cpu_s'] for r in results):,.0f}",
            f"{med['peak_mb']:,.0f}",
            f"{med['recall']:.4f}",
            f"{med['precision']:.4f}",
        )
    for workers, per_row in sorted(cpu_per_row.items()):
        # CPU-seconds per row are what a quiet core spends: wall on W quiet cores = that x rows / W
        table.add_row(
            "stage, projected",
            str(workers),
            f"{args.project:,}",
            f"{per_row * args.project / workers:,.0f}",
            f"{per_row * args.project:,.0f}",
            "",
            "",
            "bounded",
            "",
            "",
        )
    console.print(table)


if __name__ == "__main__":
    main()
