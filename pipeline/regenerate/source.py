"""Stream the rows of a mix (data/mix/<MIX>/part-*.parquet) batch by batch: never the whole mix in memory."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pyarrow.parquet as pq

from catalog.errors import DraftsetError

REQUIRED = ("id", "mode", "conversation")
OPTIONAL = ("repo_id", "category")
BATCH_ROWS = 512


def mix_shards(home: Path, mix: str) -> list[Path]:
    mix_dir = home / "data" / "mix" / mix
    shards = sorted(mix_dir.glob("part-*.parquet"))
    if not shards:
        raise DraftsetError(f"mix {mix!r} has no shards at {mix_dir}/part-*.parquet",
                            hint=f"create it with `draftset mix {mix}` (after `draftset ingest`)")
    return shards


def _columns(shard: Path) -> list[str]:
    try:
        names = set(pq.read_schema(shard).names)
    except (OSError, ValueError) as exc:  # pyarrow raises ArrowInvalid (a ValueError) on a bad file
        raise DraftsetError(f"cannot read mix shard {shard}: {exc}",
                            hint="rebuild the mix with `draftset mix`") from exc
    missing = [c for c in REQUIRED if c not in names]
    if missing:
        raise DraftsetError(f"mix shard {shard} lacks column(s) {', '.join(missing)}",
                            hint="rebuild the mix with `draftset mix`: regenerate needs id, mode, conversation")
    return [*REQUIRED, *(c for c in OPTIONAL if c in names)]


def count_rows(shards: list[Path]) -> int:
    return sum(pq.read_metadata(s).num_rows for s in shards)


def iter_rows(shards: list[Path], limit: int | None = None) -> Iterator[tuple[Path, int, dict[str, Any]]]:
    """(shard, row number in shard, row) in mix order, at most `limit` rows."""
    emitted = 0
    for shard in shards:
        columns = _columns(shard)
        number = 0
        for batch in pq.ParquetFile(shard).iter_batches(batch_size=BATCH_ROWS, columns=columns):
            for row in batch.to_pylist():
                if limit is not None and emitted >= limit:
                    return
                yield shard, number, row
                number += 1
                emitted += 1
