"""Split one mix over N workers (processes or hosts on a shared filesystem) by a stable hash of the id.

`--shard I/N` takes exactly the rows with sha1(id) mod N == I and writes only under
data/regen/<MIX>/shard-I-of-N/ (its own lock, journals, results, progress and manifest), so N workers
never touch each other's files and each resumes by id on its own. The whole mix (N = 1) keeps the
plain layout data/regen/<MIX>/. One mix holds one split: ids land in other shards under another N,
so a different N is refused. The mix-level manifest.json is complete only when every shard is.
"""

from __future__ import annotations

import fcntl
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from catalog.errors import DraftsetError
from catalog.io import stable_bucket, write_json_atomic
from pipeline.regenerate.store import ERRORS, GENERATION_FILE, SKIPPED, result_shards
from pipeline.stage import StageConfig

MANIFEST = "manifest.json"
_SHARD_DIR = re.compile(r"shard-(\d+)-of-(\d+)")


def shard_of(row_id: str | None, count: int) -> int:
    return stable_bucket(row_id or "", count)


class Shard(StageConfig):
    index: int = Field(ge=0)
    count: int = Field(ge=2)

    @model_validator(mode="after")
    def _check(self) -> Shard:
        if self.index >= self.count:
            raise ValueError(f"shard index {self.index} must be below the shard count {self.count}")
        return self

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def dirname(self) -> str:
        return f"shard-{self.index}-of-{self.count}"

    def owns(self, row_id: str | None) -> bool:
        return shard_of(row_id, self.count) == self.index

    def siblings(self) -> list[Shard]:
        return [Shard(index=i, count=self.count) for i in range(self.count) if i != self.index]


def parse_shard(value: Any) -> Any:
    """'I/N' -> {index, count}; '0/1' (the whole mix) -> None. Other values go to pydantic unchanged."""
    if not isinstance(value, str):
        return value
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", value)
    if not match:
        raise ValueError(f"shard must look like I/N (e.g. 0/4), got {value!r}")
    index, count = int(match[1]), int(match[2])
    if count == 1 and index == 0:
        return None
    return {"index": index, "count": count}


@contextmanager
def _mix_lock(mix_dir: Path) -> Iterator[None]:
    """Held for a moment only: layout checks and the mix manifest must not interleave between workers."""
    mix_dir.mkdir(parents=True, exist_ok=True)
    with (mix_dir / ".layout.lock").open("a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _counts_on_disk(mix_dir: Path) -> set[int]:
    """Shard counts of earlier runs: N per shard-*-of-N folder, 1 for the plain (unsharded) layout."""
    counts = {int(m[2]) for p in mix_dir.glob("shard-*-of-*") if p.is_dir() and (m := _SHARD_DIR.fullmatch(p.name))}
    if result_shards(mix_dir) or any((mix_dir / n).exists() for n in (GENERATION_FILE, ERRORS, SKIPPED)):
        counts.add(1)
    return counts


def claim(mix_dir: Path, shard: Shard | None, mix: str) -> Path:
    """The folder this worker writes; refuses a split other than the one earlier runs used."""
    wanted = shard.count if shard else 1
    with _mix_lock(mix_dir):
        others = sorted(_counts_on_disk(mix_dir) - {wanted})
        if others:
            earlier = " and ".join("the whole mix (no --shard)" if n == 1 else f"{n} shards" for n in others)
            asked = f"--shard {shard.label}" if shard else "the whole mix (no --shard)"
            raise DraftsetError(
                f"{mix_dir} was regenerated as {earlier}; {asked} would assign ids to other workers",
                hint=(
                    f"rerun with the earlier split (--shard I/{others[0]})"
                    if others[0] > 1
                    else "rerun without --shard"
                )
                + f", or remove {mix_dir} to start again",
            )
        out_dir = mix_dir / shard.dirname if shard else mix_dir
        out_dir.mkdir(parents=True, exist_ok=True)
        return out_dir


def sibling_dirs(mix_dir: Path, shard: Shard | None) -> list[Path]:
    return [mix_dir / other.dirname for other in shard.siblings()] if shard else []


def write_mix_manifest(mix_dir: Path, shard: Shard, mix: str) -> dict[str, Any]:
    """data/regen/<MIX>/manifest.json over all N shards: complete only when every shard is."""
    with _mix_lock(mix_dir):
        per_shard: dict[str, Any] = {}
        for index in range(shard.count):
            path = mix_dir / Shard(index=index, count=shard.count).dirname / MANIFEST
            per_shard[f"{index}/{shard.count}"] = json.loads(path.read_text()) if path.exists() else None
        finished = [m for m in per_shard.values() if m]
        manifest = {
            "stage": "regenerate",
            "mix": mix,
            "shards": shard.count,
            "complete": len(finished) == shard.count and all(m["complete"] for m in finished),
            "input_rows": sum(m["input_rows"] for m in finished),
            "totals": {k: sum(m["totals"][k] for m in finished) for k in ("results", "errors", "skipped")},
            "per_shard": {
                label: m and {k: m[k] for k in ("complete", "input_rows", "totals", "run_id")}
                for label, m in per_shard.items()
            },
            "sampling": finished[0]["sampling"] if finished else None,
            # one setting for every shard (checked when each starts): the config and the forwarded mix manifest
            "config": finished[0].get("config") if finished else None,
            "upstream": finished[0].get("upstream", []) if finished else [],
            "results": [str(p.relative_to(mix_dir)) for p in sorted(mix_dir.glob("shard-*/results-*.parquet"))],
        }
        write_json_atomic(mix_dir / MANIFEST, manifest)
        return manifest
