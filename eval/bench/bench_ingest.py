"""Ingest throughput and near-dedup time, each against a naive baseline in the same run.

    .venv/bin/python -m eval.bench.bench_ingest [--rows 100000] [--repeats 3]

1. Ingest: N ShareGPT-style rows from a local JSONL file through the real adapter (`apply_row`) into
   canonical parquet shards (`ingest_rows`), vs the `datasets` way (load_dataset("json") → map →
   to_parquet) doing the same mapping.
2. Near dedup of N prompts (10% of them reworded copies): MinHash LSH (`NearIndex`), vs brute-force
   pairwise Jaccard over the same shingle sets, timed on a subsample and extrapolated (O(n²)).
Medians of `--repeats` runs; printed as a table.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from adapters.map.apply import RowError, apply_row
from adapters.read.source import iter_local_rows
from adapters.spec import AdapterSpec
from pipeline.dedup.near import NearIndex
from pipeline.ingest.run import IngestConfig, ingest_rows
from pipeline.ingest.sample import RowSample
from pipeline.rows.codec import to_row
from pipeline.rows.keys import normalize, shingles
from pipeline.stage import StageRun

SPEC = AdapterSpec.from_data(
    {
        "source": {
            "repo_id": "bench/sharegpt",
            "revision": "c" * 40,
            "config": "default",
            "split": "train",
            "data_files": ["train.jsonl"],
        },
        "layout": "messages",
        "messages_path": "conversations",
        "role_key": "from",
        "content_key": "value",
        "role_map": {"human": "user", "gpt": "assistant", "system": "system"},
        "mode": "regenerate",
    }
)


def _prompts(n: int, seed: int = 0) -> list[str]:
    """n prompts of 20-60 words; every 10th is a reworded copy of an earlier one (a near duplicate)."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(30_000)]
    out: list[str] = []
    for i in range(n):
        if i % 10 == 9:
            words = out[rng.randrange(len(out))].split()
            out.append(" ".join(["please"] + words[1:] + ["thanks"]))
        else:
            out.append(" ".join(rng.choices(vocab, k=rng.randint(20, 60))))
    return out


def _write_jsonl(path: Path, prompts: list[str]) -> None:
    with path.open("w") as f:
        for i, p in enumerate(prompts):
            f.write(
                json.dumps(
                    {
                        "id": str(i),
                        "conversations": [{"from": "human", "value": p}, {"from": "gpt", "value": "An answer " * 20}],
                    }
                )
                + "\n"
            )


def bench_ingest_ours(src: Path, out: Path) -> int:
    config = IngestConfig.for_spec(SPEC)
    with StageRun("ingest", config, out) as run:
        ingest_rows(SPEC, iter_local_rows([("train.jsonl", src)]), out, run)
    return run.counts["out"]


def bench_ingest_plan_sized(src: Path, out: Path, rows: int) -> int:
    """The seed's shape: a 100K plan x3 oversampling over ~13M rows maps 1 row in ~43; here 1 in 40."""
    config = IngestConfig.for_spec(SPEC)
    sample = RowSample(target=rows // 40, available=rows)
    with StageRun("ingest", config, out) as run:
        ingest_rows(SPEC, iter_local_rows([("train.jsonl", src)]), out, run, sample=sample)
    return run.counts["out"]


def bench_ingest_datasets(src: Path, out: Path) -> int:
    import datasets

    datasets.disable_progress_bars()

    def convert(row: Mapping[str, Any], idx: int) -> dict[str, str]:
        try:  # dict(): `map` hands over a lazy row object, the adapter wants a plain mapping
            return {"row": json.dumps([to_row(c) for c in apply_row(SPEC, idx, dict(row))])}
        except RowError:
            return {"row": "[]"}

    ds = datasets.load_dataset("json", data_files=str(src), split="train", cache_dir=str(out / "cache"))
    mapped = ds.map(convert, with_indices=True, remove_columns=ds.column_names)
    mapped.to_parquet(str(out / "out.parquet"))
    return sum(1 for r in mapped["row"] if r != "[]")  # records actually produced


def bench_near_ours(prompts: list[str]) -> int:
    index = NearIndex(threshold=0.8)
    sigs = index.signatures(normalize(p) for p in prompts)
    return sum(index.match_or_add(str(i), s) is not None for i, s in enumerate(sigs))


def bench_near_bruteforce(prompts: list[str]) -> int:
    sets = [shingles(normalize(p)) for p in prompts]
    dropped = 0
    kept: list[set[bytes]] = []
    for s in sets:
        if any(len(s & k) / len(s | k) >= 0.8 for k in kept):
            dropped += 1
        else:
            kept.append(s)
    return dropped


def _median_time(fn: Callable[..., object], *args: Any, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--brute-sample", type=int, default=3_000)
    args = parser.parse_args()
    prompts = _prompts(args.rows)
    table = Table(title=f"ingest + near-dedup, {args.rows:,} rows, median of {args.repeats}")
    for col in ("what", "method", "time (s)", "rows/s", "result", "speed-up"):
        table.add_column(col)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "train.jsonl"
        _write_jsonl(src, prompts)
        runs = iter(range(10**6))
        t_ours, n_ours = _median_time(
            lambda: bench_ingest_ours(src, Path(tmp) / f"o{next(runs)}"), repeats=args.repeats
        )
        t_ds, n_ds = _median_time(
            lambda: bench_ingest_datasets(src, Path(tmp) / f"d{next(runs)}"), repeats=args.repeats
        )
        t_plan, n_plan = _median_time(
            lambda: bench_ingest_plan_sized(src, Path(tmp) / f"p{next(runs)}", args.rows), repeats=args.repeats
        )
    table.add_row(
        "ingest",
        "datasets load_dataset→map→to_parquet (baseline)",
        f"{t_ds:.2f}",
        f"{args.rows / t_ds:,.0f}",
        f"{n_ds:,} rows",
        "1.0x",
    )
    table.add_row(
        "ingest",
        "draftset ingest_rows (apply_row → ParquetShardWriter)",
        f"{t_ours:.2f}",
        f"{args.rows / t_ours:,.0f}",
        f"{n_ours:,} records",
        f"{t_ds / t_ours:.1f}x",
    )
    table.add_row(
        "ingest",
        "draftset, plan-sized: 1 row in 40 mapped (row-hash sample), the rest skipped unparsed",
        f"{t_plan:.2f}",
        f"{args.rows / t_plan:,.0f} read",
        f"{n_plan:,} records",
        f"{t_ours / t_plan:.1f}x vs all",
    )
    seed_rows = 13_000_000
    table.add_row(
        "ingest",
        f"the seed's {seed_rows:,} rows, plan-sized (projected at this rate, one core)",
        f"~{t_plan / args.rows * seed_rows:,.0f}",
        "",
        "",
        f"all rows: ~{t_ours / args.rows * seed_rows:,.0f} s",
    )
    sample = prompts[: args.brute_sample]
    t_bf, d_bf = _median_time(bench_near_bruteforce, sample, repeats=args.repeats)
    t_bf_full = t_bf * (args.rows / len(sample)) ** 2
    t_near, d_near = _median_time(bench_near_ours, prompts, repeats=args.repeats)
    t_near_s, d_near_s = _median_time(bench_near_ours, sample, repeats=args.repeats)
    table.add_row(
        "near dedup",
        f"brute-force pairwise Jaccard, {len(sample):,} prompts",
        f"{t_bf:.2f}",
        f"{len(sample) / t_bf:,.0f}",
        f"{d_bf} dropped",
        "",
    )
    table.add_row(
        "near dedup",
        f"MinHash LSH, {len(sample):,} prompts",
        f"{t_near_s:.2f}",
        f"{len(sample) / t_near_s:,.0f}",
        f"{d_near_s} dropped",
        f"{t_bf / t_near_s:.1f}x",
    )
    table.add_row(
        "near dedup",
        f"brute-force, {args.rows:,} prompts (extrapolated n²)",
        f"~{t_bf_full:,.0f}",
        f"{args.rows / t_bf_full:,.0f}",
        "",
        "1.0x",
    )
    table.add_row(
        "near dedup",
        f"MinHash LSH, {args.rows:,} prompts",
        f"{t_near:.2f}",
        f"{args.rows / t_near:,.0f}",
        f"{d_near:,} dropped (planted {args.rows // 10:,})",
        f"{t_bf_full / t_near:,.0f}x",
    )
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
