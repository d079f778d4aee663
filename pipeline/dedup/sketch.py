"""Dedup's parallel pass: one normalized shard → one `keys` parquet file of what the decision needs.

Per row: its identity and survivor-order columns, the token length, the hash of the normalized prompt
(exact duplicates), its MinHash signature and LSH band keys (near duplicates). Nothing of the
conversation itself is kept, so the decision step reads ~0.6 KB a row, and a task holds one batch in
memory whatever the corpus. The output of shard number `n` is `keys-<n>.parquet`, written atomically:
it depends on that shard alone, so any split of shards over workers gives the same files, and a file
already there is not computed again (resume).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from catalog.io import atomic_path
from pipeline.dedup.minhash import band_keys, bands, signatures
from pipeline.parallel import owned
from pipeline.rows.codec import from_row
from pipeline.rows.keys import hash_normalized, normalize
from pipeline.target.lengths import TokenCounter

_COLUMNS = ["id", "repo_id", "config", "split", "row_index", "category", "mode", "conversation"]
BATCH = 2_048


def keys_schema(num_perm: int, n_bands: int) -> pa.Schema:
    return pa.schema(
        [
            ("key", pa.int64()),  # shard number << 32 | row in shard: unique, stable, cheap to join on
            ("record_id", pa.string()),
            ("repo_id", pa.string()),
            ("config", pa.string()),
            ("split", pa.string()),
            ("row_index", pa.int64()),
            ("category", pa.string()),
            ("mode", pa.string()),
            ("prompt_hash", pa.string()),
            ("tokens", pa.int64()),
            ("empty", pa.bool_()),  # no words after normalizing: exact dedup only, never near
            ("sig", pa.binary(num_perm * 4)),
            *[(f"band_{j}", pa.int64()) for j in range(n_bands)],
        ]
    )


@dataclass(frozen=True)
class SketchTask:
    """Picklable task for the executor: the shard list is fixed before any task starts."""

    shards: tuple[str, ...]
    out_dir: str
    threshold: float
    num_perm: int
    ngram: int
    tokenizer_dir: str | None

    def __call__(self, rank: int, world: int) -> dict[str, int]:
        counter = TokenCounter(Path(self.tokenizer_dir) if self.tokenizer_dir else None)
        rows = skipped = 0
        for number, shard in owned(list(enumerate(self.shards)), rank, world):
            target = Path(self.out_dir) / f"keys-{number:05d}.parquet"
            if target.is_file():  # computed by an earlier, interrupted run
                skipped += pq.ParquetFile(target).metadata.num_rows
                continue
            rows += self.sketch_shard(number, Path(shard), target, counter)
        return {"rows": rows, "rows_resumed": skipped}

    def sketch_shard(self, number: int, shard: Path, target: Path, counter: TokenCounter) -> int:
        b, r = bands(self.threshold, self.num_perm)
        schema = keys_schema(self.num_perm, b)
        written = 0
        with atomic_path(target) as tmp, pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
            for batch in pq.ParquetFile(shard).iter_batches(batch_size=BATCH, columns=_COLUMNS):
                raw = batch.to_pydict()
                convs = [
                    from_row({"id": i, "repo_id": rep, "conversation": c})
                    for i, rep, c in zip(raw["id"], raw["repo_id"], raw["conversation"])
                ]
                normalized = [normalize(c.prompt_text()) for c in convs]
                sigs = signatures(normalized, self.num_perm, self.ngram)
                keys = band_keys(sigs, b, r)
                n = len(convs)
                columns: dict[str, object] = {
                    "key": (np.int64(number) << 32) + np.arange(written, written + n, dtype=np.int64),
                    "record_id": raw["id"],
                    **{c: raw[c] for c in ("repo_id", "config", "split", "row_index", "category", "mode")},
                    "prompt_hash": [hash_normalized(t) for t in normalized],
                    "tokens": counter.count_many([c.context_text() for c in convs]),
                    "empty": [not t for t in normalized],
                    "sig": pa.FixedSizeBinaryArray.from_buffers(
                        pa.binary(self.num_perm * 4), n, [None, pa.py_buffer(np.ascontiguousarray(sigs).tobytes())]
                    ),
                    **{f"band_{j}": keys[:, j] for j in range(b)},
                }
                writer.write_table(pa.table(columns, schema=schema))
                written += n
        return written
