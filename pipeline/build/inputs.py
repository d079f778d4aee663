"""Where `draftset build MIX` reads conversations: the regenerated data, or the mix itself for native-only data."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pyarrow.parquet as pq

from catalog.errors import DraftsetError
from catalog.home import Home
from pipeline.stage import read_manifest

Kind = Literal["regen", "mix"]
Source = Literal["auto", Kind]
NEEDED = ("id", "conversation")


@dataclass(frozen=True)
class BuildInput:
    kind: Kind
    directory: Path
    shards: list[Path]

    def count(self) -> int:
        return sum(pq.ParquetFile(p).metadata.num_rows for p in self.shards)

    def rows(self) -> Iterator[dict[str, Any]]:
        for path in self.shards:
            for batch in pq.ParquetFile(path).iter_batches(columns=list(NEEDED), batch_size=1024):
                yield from batch.to_pylist()

    def manifest(self) -> dict[str, Any] | None:
        """The manifest of the stage that wrote this input (regenerate's or mix's): build forwards it in its own.

        Fallback, only for a folder without manifest.json (written before stages had one, or a regeneration
        stopped before its end): the config.json that stage wrote when it started."""
        found = read_manifest(self.directory)
        if found is not None:
            return found
        config = self.stage_value_file("config.json")
        return None if config is None else {"stage": config.get("stage", self.kind), "config": config, "partial": True}

    def setting(self, key: str) -> Any:
        """A setting of the stage that wrote this input, from its manifest's config (a split regeneration: the
        shards' manifests). Fallback for folders whose manifests carry no config: config.json."""
        for folder in [self.directory, *sorted(self.directory.glob("shard-*/"))]:
            config = (read_manifest(folder) or {}).get("config")
            if isinstance(config, dict) and key in config:
                return config[key]
        return self.stage_value(key)

    def stage_value_file(self, file: str) -> dict[str, Any] | None:
        paths = [self.directory / file, *sorted(self.directory.glob(f"shard-*/{file}"))]
        path = next((p for p in paths if p.is_file()), None)
        return json.loads(path.read_text()) if path else None

    def stage_value(self, key: str, file: str = "config.json") -> Any:
        """A value the stage that wrote this input recorded (config.json or manifest.json), None if absent."""
        # a sharded regeneration keeps config.json per shard (data/regen/<MIX>/shard-I-of-N/; one setting)
        found = self.stage_value_file(file)
        return None if found is None else found.get(key)


# Shard names each upstream stage writes (regenerate: results-<run>-<seq>, mix: part-<seq>).
SHARD_GLOB = {"regen": "results-*.parquet", "mix": "part-*.parquet"}


def _conversation_shards(directory: Path, kind: str) -> list[Path]:
    """Finished shards of the stage that wrote `directory`, including those of a regeneration split over
    workers (shard-I-of-N/ folders). A shard without id + conversation is an error, never skipped."""
    pattern = SHARD_GLOB[kind]
    shards = sorted([*directory.glob(pattern), *directory.glob(f"shard-*/{pattern}")])
    for path in shards:
        missing = set(NEEDED) - set(pq.read_schema(path).names)
        if missing:
            raise DraftsetError(
                f"{path} has no column {', '.join(sorted(missing))}: it is not a conversation shard",
                hint=f"move it out of {directory}, or re-run the stage that wrote it",
            )
    return shards


def resolve_input(home: Path, mix: str, source: Source = "auto") -> BuildInput:
    candidates: dict[Kind, Path] = {"regen": Home(home).regen(mix), "mix": Home(home).mix(mix)}  # both check the name
    order: list[Kind] = ["regen", "mix"] if source == "auto" else [source]
    for kind in order:
        directory = candidates[kind]
        if directory.is_dir():
            found = BuildInput(kind, directory, _conversation_shards(directory, kind))
            if found.count():  # no shards, or only empty ones: nothing to build, say so before starting
                return found
            raise DraftsetError(
                f"{directory} has no rows in {SHARD_GLOB[kind]} shards",
                hint=f"re-run: draftset regenerate {mix} --endpoint URL"
                if kind == "regen"
                else f"re-run: draftset mix {mix}",
            )
    looked = " or ".join(str(candidates[k]) for k in order)
    raise DraftsetError(
        f"nothing to build for {mix!r}: no {looked}",
        hint=f"run `draftset regenerate {mix} --endpoint URL` (or `draftset mix {mix}` for native-only data) first",
    )
