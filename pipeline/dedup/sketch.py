"""Dedup's parallel pass: one normalized shard → one `keys` parquet file of what the decision needs.

Per row: its identity and survivor-order columns, the token length, the hash of the normalized prompt
(exact duplicates), its MinHash signature and LSH band keys (near duplicates). Nothing of the
conversation itself is kept, so the decision step reads ~0.6 KB a row, and a task holds one batch in
memory whatever the corpus. The output of shard number `n` is `keys-<n>.parquet`, written atomically:
it depends on that shard alone, so any split of shards over workers gives the same files, and a file
already there is not computed again (resume).
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from catalog.io import atomic_path
from catalog.shards import RECORD_SCHEMA, iter_batches, shard_path
from pipeline.dedup.minhash import band_keys, bands, signatures
from pipeline.parallel import owned
from pipeline.rows.codec import from_row
from pipeline.rows.keys import hash_normalized, normalize
from pipeline.targets.lengths import TokenCounter

# A record's source identity and survivor-order fields, carried over as the normalized shards type them.
CARRIED = ("repo_id", "config", "split", "row_index", "category", "mode")
_COLUMNS = ["id", *CARRIED, "conversation"]
BATCH = 2_048


def keys_schema(num_perm: int, n_bands: int) -> pa.Schema:
    return pa.schema(
        [
            ("key", pa.int64()),  # shard number << 32 | row in shard: unique, stable, cheap to join on
            ("record_id", RECORD_SCHEMA.field("id").type),
            *(RECORD_SCHEMA.field(name) for name in (*CARRIED, "prompt_hash")),
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
        cpu: defaultdict[str, float] = defaultdict(float)
        rows = skipped = 0
        for number, shard in owned(list(enumerate(self.shards)), rank, world):
            target = shard_path(Path(self.out_dir), number, "keys")
            if target.is_file():  # computed by an earlier, interrupted run
                skipped += pq.ParquetFile(target).metadata.num_rows
                continue
            rows += self.sketch_shard(number, Path(shard), target, counter, cpu)
        return {"rows": rows, "rows_resumed": skipped, **{f"cpu_ms_{k}": int(v * 1000) for k, v in cpu.items()}}

    def sketch_shard(
        self, number: int, shard: Path, target: Path, counter: TokenCounter, cpu: defaultdict[str, float] | None = None
    ) -> int:
        """Write the keys file of one shard; `cpu` gathers CPU seconds by phase (parse, minhash, rest)."""
        cpu = defaultdict(float) if cpu is None else cpu
        clock = time.process_time
        b, r = bands(self.threshold, self.num_perm)
        schema = keys_schema(self.num_perm, b)
        written = 0
        with atomic_path(target) as tmp, pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
            for batch in iter_batches([shard], _COLUMNS, BATCH):
                t0 = clock()
                raw = batch.to_pydict()
                convs = [
                    from_row({"id": i, "repo_id": rep, "conversation": c})
                    for i, rep, c in zip(raw["id"], raw["repo_id"], raw["conversation"])
                ]
                prompts = [c.prompt_text() for c in convs]
                t1 = clock()
                normalized = [normalize(p) for p in prompts]
                sigs = signatures(normalized, self.num_perm, self.ngram)
                keys = band_keys(sigs, b, r)
                t2 = clock()
                cpu["parse"] += t1 - t0
                cpu["minhash"] += t2 - t1
                n = len(convs)
                columns: dict[str, object] = {
                    "key": (np.int64(number) << 32) + np.arange(written, written + n, dtype=np.int64),
                    "record_id": raw["id"],
                    **{c: raw[c] for c in CARRIED},
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
                cpu["rest"] += clock() - t2
        return written
