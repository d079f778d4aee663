"""`draftset check pilot`: train on nested subsets of a build and measure each, to forecast what more data buys.

The build's rows are split once by training's held-out rule, so every subset is judged on the same
held-out prompts; the rest is shuffled once (by id hash) and subset k trains on its first n_k rows, so
the subsets are nested. Each subset is trained online (taps from the target's forward, nothing on disk)
and measured by `check accept-length`'s decoding; each measurement goes to draft_evals with its training
sample count and optimizer steps, where agents/forecast.py fits the curve. Under a time budget, a subset whose predicted
time (scaled by its size from the ones before) would not fit is skipped and said so.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from catalog.errors import DraftsetError
from eval.specdecode.evaluate import Measurement, measure
from eval.specdecode.records import recipe_row, train_recipe
from pipeline.train.data import is_heldout


def _shuffle_key(row_id: str) -> str:
    return hashlib.sha256(f"pilot:{row_id}".encode()).hexdigest()


def nested(ids: list[str], heldout_every: int) -> tuple[list[str], list[str]]:
    """(held-out ids, the rest in a fixed shuffle): subset n trains on the first n of the rest."""
    held = [i for i in ids if is_heldout(i, heldout_every)]
    rest = sorted((i for i in ids if not is_heldout(i, heldout_every)), key=_shuffle_key)
    return held, rest


def write_subset(build_dir: Path, out_dir: Path, keep: set[str]) -> int:
    """A build of the rows whose id is in `keep` (same manifest, template and draft vocabulary)."""
    import json

    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    out_dir.mkdir(parents=True, exist_ok=True)
    n = 0
    for shard in sorted(Path(build_dir).glob("rows-*.parquet")):
        table = pq.read_table(shard)
        part = table.filter(pc.is_in(table["id"], value_set=pa.array(sorted(keep))))
        pq.write_table(part, out_dir / shard.name)
        n += part.num_rows
    shutil.copy(Path(build_dir) / "vocab.safetensors", out_dir / "vocab.safetensors")
    manifest = json.loads((Path(build_dir) / "manifest.json").read_text())
    manifest.update(n_rows=n, subset_of=str(Path(build_dir).resolve()))
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2))  # last: marks the subset complete
    return n


@dataclass
class PilotPoint:
    fraction: float
    train_samples: int
    seconds: float
    measurement: Measurement
    train_steps: int | None = None  # optimizer steps the subset's draft trained for (its resolved.json)
    recipe: str | None = None  # the recipe row its settings came from (resolved.json; None: every one given)


@dataclass
class Pilot:
    points: list[PilotPoint] = field(default_factory=list)
    skipped: list[tuple[float, str]] = field(default_factory=list)
    # id -> tokens of every training row of the whole build: the full run's batches, for the forecast's steps
    full_lengths: dict[str, int] = field(default_factory=dict)


def run_pilot(
    build_dir: Path,
    model_dir: Path,
    out_dir: Path,
    fractions: list[float],
    budget_s: float | None,
    train: Callable[[Path, Path], None],
    steps: list[int],
    prompts: int,
    max_new: int,
    heldout_every: int = 20,
    device: str = "auto",
    record: Callable[[Measurement], None] | None = None,
) -> Pilot:
    """Train and measure each fraction (smallest first); `train(build, draft_dir)` trains one draft."""
    from pipeline.capture.rows import read_build_rows

    if not fractions or any(not 0 < f <= 1 for f in fractions):
        raise DraftsetError(f"fractions must lie in (0, 1]: {fractions}", hint="e.g. --fractions 0.125,0.25,0.5")
    _, rows = read_build_rows(build_dir, vocab_size=1 << 62)
    held, rest = nested([r.id for r in rows if not r.problem], heldout_every)
    if not held or not rest:
        raise DraftsetError(
            f"build {build_dir} has {len(held)} held-out and {len(rest)} training rows: a pilot needs both",
            hint="a larger build, or a smaller --heldout-every",
        )
    by_id = {r.id: len(r.input_ids) for r in rows if not r.problem}
    pilot, started, per_sample = Pilot(full_lengths={i: by_id[i] for i in rest}), time.monotonic(), None
    for fraction in sorted(fractions):
        n = max(1, int(len(rest) * fraction))
        if budget_s is not None and per_sample is not None:
            left = budget_s - (time.monotonic() - started)
            if per_sample * n > left:
                pilot.skipped.append((fraction, f"needs ~{per_sample * n:.0f} s, {max(left, 0):.0f} s left"))
                continue
        t0 = time.monotonic()
        sub, draft = out_dir / f"build-{n}", out_dir / f"draft-{n}"
        write_subset(build_dir, sub, set(held) | set(rest[:n]))
        train(sub, draft)
        m = measure(draft, sub, model_dir, steps, prompts, max_new, False, device)
        if record is not None:
            record(m)
        seconds = time.monotonic() - t0
        per_sample = seconds / n
        pilot.points.append(PilotPoint(fraction, n, seconds, m, train_recipe(draft)[0], recipe_row(draft)))
    return pilot
