"""Helpers for the regeneration tests: mix shards in the real mix column layout."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from adapters.records import Conversation, Message, Source, record_id
from pipeline.rows.codec import to_row


def conversation(
    index: int, turns: list[tuple[str, str]], mode: str = "regenerate", repo: str = "test/mix-src"
) -> Conversation:
    return Conversation(
        id=record_id(repo, "default", "train", index),
        source=Source(repo_id=repo, revision="0" * 40, config="default", split="train", row_index=index),
        category="general",
        mode=mode,
        messages=[Message(role=r, content=c) for r, c in turns],
    )


def write_mix(
    home: Path,
    name: str,
    conversations: list[Conversation],
    rows_per_shard: int = 50,
    raw_overrides: dict[int, dict] | None = None,
) -> Path:
    """data/mix/<name>/part-*.parquet with the mix columns (ingest's to_row); overrides inject bad rows."""
    rows = [{**to_row(conv), **(raw_overrides or {}).get(i, {})} for i, conv in enumerate(conversations)]
    out = home / "data" / "mix" / name
    out.mkdir(parents=True, exist_ok=True)
    for n, start in enumerate(range(0, len(rows), rows_per_shard)):
        pq.write_table(pa.Table.from_pylist(rows[start : start + rows_per_shard]), out / f"part-{n:05d}.parquet")
    return out


def simple_mix(n: int, *, native_every: int = 0, marker_rows: dict[int, str] | None = None) -> list[Conversation]:
    convs = []
    for i in range(n):
        text = f"question number {i}: explain topic {i % 7}" + (marker_rows or {}).get(i, "")
        mode = "native" if native_every and i % native_every == 0 else "regenerate"
        turns = [("user", text), ("assistant", f"original answer {i}")]
        convs.append(conversation(i, turns, mode=mode))
    return convs
