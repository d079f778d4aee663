"""Stream the rows of a mix (data/mix/<MIX>/part-*.parquet) batch by batch: never the whole mix in memory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from catalog.errors import DraftsetError
from catalog.home import Home
from catalog.shards import shard_paths

REQUIRED = ("id", "mode", "conversation")
OPTIONAL = ("repo_id", "category")
BATCH_ROWS = 512


def mix_shards(home: Path, mix: str) -> list[Path]:
    folder = Home(home).mix(mix)  # refuses a name that would escape data/mix/
    shards = shard_paths(folder)
    if not shards:
        raise DraftsetError(
            f"mix {mix!r} has no shards at {folder}/part-*.parquet",
            hint=f"create it with `draftset mix {mix}` (after `draftset ingest`)",
        )
    return shards


def _columns(shard: Path) -> list[str]:
    try:
        names = set(pq.read_schema(shard).names)
    except (OSError, ValueError) as exc:  # pyarrow raises ArrowInvalid (a ValueError) on a bad file
        raise DraftsetError(
            f"cannot read mix shard {shard}: {exc}", hint="rebuild the mix with `draftset mix`"
        ) from exc
    missing = [c for c in REQUIRED if c not in names]
    if missing:
        raise DraftsetError(
            f"mix shard {shard} lacks column(s) {', '.join(missing)}",
            hint="rebuild the mix with `draftset mix`: regenerate needs id, mode, conversation",
        )
    return [*REQUIRED, *(c for c in OPTIONAL if c in names)]


def count_rows(shards: list[Path], limit: int | None = None, owns: Callable[[Any], bool] | None = None) -> int:
    """Rows `iter_rows` yields; a worker's share (`owns`) needs one pass over the id column."""
    if owns is None:
        total = sum(pq.read_metadata(s).num_rows for s in shards)
        return min(total, limit) if limit else total
    return sum(1 for _ in iter_rows(shards, limit, owns, ids_only=True))


def iter_rows(
    shards: list[Path], limit: int | None = None, owns: Callable[[Any], bool] | None = None, ids_only: bool = False
) -> Iterator[tuple[Path, int, dict[str, Any]]]:
    """(shard, row number in shard, row) in mix order among the first `limit` rows, those whose id `owns`
    accepts (a worker's share: every worker applies the limit to the same mix rows)."""
    emitted = 0
    for shard in shards:
        columns = _columns(shard)
        number = 0
        for batch in pq.ParquetFile(shard).iter_batches(batch_size=BATCH_ROWS, columns=["id"] if ids_only else columns):
            for row in batch.to_pylist():
                if limit is not None and emitted >= limit:
                    return
                if owns is None or owns(row.get("id")):
                    yield shard, number, row
                number += 1
                emitted += 1
