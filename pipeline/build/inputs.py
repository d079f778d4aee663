"""Where `draftset build MIX` reads conversations: the regenerated data, or the mix itself for native-only data."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Literal

import pyarrow.parquet as pq

from catalog.errors import DraftsetError

Source = Literal["auto", "regen", "mix"]
NEEDED = ("id", "conversation")


@dataclass(frozen=True)
class BuildInput:
    kind: Literal["regen", "mix"]
    directory: Path
    shards: list[Path]

    def count(self) -> int:
        return sum(pq.ParquetFile(p).metadata.num_rows for p in self.shards)

    def rows(self) -> Iterator[dict[str, Any]]:
        for path in self.shards:
            for batch in pq.ParquetFile(path).iter_batches(columns=list(NEEDED), batch_size=1024):
                yield from batch.to_pylist()

    def stage_value(self, key: str, file: str = "config.json") -> Any:
        """A value the stage that wrote this input recorded (config.json or manifest.json), None if absent."""
        # a sharded regeneration keeps config.json per shard (data/regen/<MIX>/shard-I-of-N/; one setting)
        paths = [self.directory / file, *sorted(self.directory.glob(f"shard-*/{file}"))]
        path = next((p for p in paths if p.is_file()), None)
        return json.loads(path.read_text()).get(key) if path else None


def _conversation_shards(directory: Path) -> list[Path]:
    """Finished parquet shards that carry id + conversation (temp files start with '.'), including those
    of a regeneration split over workers (shard-I-of-N/ folders)."""
    shards = []
    for path in sorted([*directory.glob("*.parquet"), *directory.glob("shard-*/*.parquet")]):
        if path.name.startswith("."):
            continue
        names = set(pq.read_schema(path).names)
        if set(NEEDED) <= names:
            shards.append(path)
    return shards


def resolve_input(home: Path, mix: str, source: Source = "auto") -> BuildInput:
    candidates = {"regen": home / "data" / "regen" / mix, "mix": home / "data" / "mix" / mix}
    order = ["regen", "mix"] if source == "auto" else [source]
    for kind in order:
        directory = candidates[kind]
        if directory.is_dir():
            shards = _conversation_shards(directory)
            if shards:
                return BuildInput(kind, directory, shards)
            raise DraftsetError(f"{directory} has no parquet shards with columns {', '.join(NEEDED)}",
                                hint=f"re-run: draftset regenerate {mix} --endpoint URL" if kind == "regen"
                                else f"re-run: draftset mix {mix}")
    looked = " or ".join(str(candidates[k]) for k in order)
    raise DraftsetError(f"nothing to build for {mix!r}: no {looked}",
                        hint=f"run `draftset regenerate {mix} --endpoint URL` (or `draftset mix {mix}` for "
                             "native-only data) first")
