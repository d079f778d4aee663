"""The mix's copy step as executor tasks: each input shard's chosen rows → one mix shard, in input order.

`part-<n>.parquet` holds the chosen rows of input shard n (none is written when it has none), so the mix
reads back in the same order whichever worker, process or node copied which shard, and a re-run of a
task rewrites the same file. The chosen ids travel as a parquet file every task reads, not through the
executor's pickles (a 100K-sample mix is 100K ids).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from catalog.io import atomic_path
from pipeline.parallel import owned


def write_chosen(path: Path, ids: set[str]) -> None:
    with atomic_path(path) as tmp:
        pq.write_table(pa.table({"id": pa.array(sorted(ids), pa.string())}), tmp)


@dataclass(frozen=True)
class CopyChosen:
    shards: tuple[str, ...]
    chosen: str  # parquet file of the chosen ids
    out_dir: str

    def __call__(self, rank: int, world: int) -> dict[str, int]:
        ids = pq.read_table(self.chosen).column("id")
        copied = 0
        for number, shard in owned(list(enumerate(self.shards)), rank, world):
            table = pq.read_table(shard)
            picked = table.filter(pc.is_in(table.column("id"), value_set=ids))
            if picked.num_rows:
                with atomic_path(Path(self.out_dir) / f"part-{number:05d}.parquet") as tmp:
                    pq.write_table(picked, tmp, compression="zstd")
            copied += picked.num_rows
        return {"rows": copied}
