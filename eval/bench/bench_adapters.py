"""Adapter throughput on one core: `apply_row` vs the same mapping through `datasets.Dataset.map`.

    .venv/bin/python -m eval.bench.bench_adapters [--rows 100000] [--runs 3]

Three row shapes (ShareGPT human/gpt, OpenAI messages with a system column, nebius-style trajectories
with null system text and per-step masks), synthetic and seeded. The baseline is the straightforward
way to write the same mapping: a per-row function reading the spec's fields each time, run by
`Dataset.map` (one process, in memory, no cache). Both produce the same canonical turns; medians of
`--runs` runs are printed as rows per second.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from adapters.map.apply import apply_row
from adapters.spec import AdapterSpec

SOURCE = {
    "repo_id": "bench/rows",
    "revision": "0" * 40,
    "config": "default",
    "split": "train",
    "data_files": ["data/train.parquet"],
}
WORDS = "the a function returns list value error file test agent tool call patch fix bug loop".split()


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def sharegpt(rng: random.Random, i: int) -> dict[str, Any]:
    turns = []
    for _ in range(rng.randint(1, 3)):
        turns += [{"from": "human", "value": _text(rng, 30)}, {"from": "gpt", "value": _text(rng, 80)}]
    return {"id": str(i), "conversations": turns}


def messages(rng: random.Random, i: int) -> dict[str, Any]:
    turns = [{"role": "user", "content": _text(rng, 30)}, {"role": "assistant", "content": _text(rng, 80)}]
    return {"prompt_id": str(i), "system": "You are helpful.", "messages": turns * rng.randint(1, 2)}


def trajectory(rng: random.Random, i: int) -> dict[str, Any]:
    steps = [{"role": "system", "text": None, "system_prompt": _text(rng, 40), "mask": False}]
    for _ in range(rng.randint(2, 4)):
        steps += [
            {"role": "user", "text": _text(rng, 40), "system_prompt": None, "mask": False},
            {"role": "ai", "text": _text(rng, 60), "system_prompt": None, "mask": True},
        ]
    steps.append({"role": "user", "text": _text(rng, 20), "system_prompt": None, "mask": False})
    return {"instance_id": f"task-{i}", "trajectory": steps}


SHAPES: dict[str, tuple[Callable[[random.Random, int], dict[str, Any]], dict[str, Any]]] = {
    "sharegpt": (
        sharegpt,
        {
            "messages_path": "conversations",
            "role_key": "from",
            "content_key": "value",
            "role_map": {"human": "user", "gpt": "assistant", "system": "system"},
        },
    ),
    "messages": (
        messages,
        {
            "messages_path": "messages",
            "role_key": "role",
            "content_key": "content",
            "role_map": {"user": "user", "assistant": "assistant"},
            "system_field": "system",
        },
    ),
    "trajectory": (
        trajectory,
        {
            "layout": "trajectory",
            "messages_path": "trajectory",
            "role_key": "role",
            "content_key": "text",
            "null_policy": {"system": "system_prompt"},
            "train_flag_key": "mask",
            "role_map": {"system": "system", "user": "user", "ai": "assistant"},
        },
    ),
}


def naive_map(spec: AdapterSpec) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The mapping written the obvious way: read the spec on every row, build plain dicts."""

    def fn(row: dict[str, Any]) -> dict[str, Any]:
        assert spec.messages_path is not None  # the benchmark's specs all read a turn list
        out = []
        if spec.system_field and row.get(spec.system_field):
            out.append({"role": "system", "content": row[spec.system_field]})
        for turn in row[spec.messages_path]:
            role = spec.role_map[turn[spec.role_key]]
            content = turn[spec.content_key]
            if content is None and role in spec.null_policy:
                content = turn[spec.null_policy[role]]
            out.append({"role": role, "content": content})
        last_user = max(i for i, m in enumerate(out) if m["role"] == "user")
        return {"turns": out[: last_user + 1]}

    return fn


def _median_rate(fn: Callable[[], int], runs: int) -> float:
    rates = []
    for _ in range(runs):
        start = time.perf_counter()
        n = fn()
        rates.append(n / (time.perf_counter() - start))
    return statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    import datasets
    from rich.console import Console
    from rich.table import Table

    datasets.disable_caching()
    datasets.disable_progress_bars()
    table = Table(title=f"adapter throughput, one core, {args.rows:,} rows, median of {args.runs}")
    for col in ("shape", "apply_row rows/s", "Dataset.map rows/s", "speed-up"):
        table.add_column(col, justify="right")
    for name, (make, fields) in SHAPES.items():
        rng = random.Random(0)
        rows = [make(rng, i) for i in range(args.rows)]
        spec = AdapterSpec.from_data({"source": SOURCE, "layout": "messages", **fields})
        ours = [[(m.role, m.content) for m in apply_row(spec, i, r)[0].messages] for i, r in enumerate(rows[:1000])]
        ds = datasets.Dataset.from_list(rows)
        check = ds.select(range(1000)).map(naive_map(spec), remove_columns=ds.column_names)
        theirs = [[(t["role"], t["content"]) for t in turns] for turns in check["turns"]]
        assert ours == theirs, f"{name}: baseline and apply_row disagree"

        def run_ours() -> int:
            return sum(len(apply_row(spec, i, r)) for i, r in enumerate(rows))

        def run_map() -> int:
            return len(ds.map(naive_map(spec), remove_columns=ds.column_names, keep_in_memory=True))

        fast, slow = _median_rate(run_ours, args.runs), _median_rate(run_map, args.runs)
        table.add_row(name, f"{fast:,.0f}", f"{slow:,.0f}", f"{fast / slow:.1f}x")
    Console().print(table)


if __name__ == "__main__":
    main()
