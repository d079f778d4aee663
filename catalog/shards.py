"""Parquet shards of records: atomic writes, id-based resume, streaming reads.

Every stage that writes row data (ingest, mix, regenerate, build) uses `ParquetShardWriter`: rows are
buffered and flushed as `<prefix>-NNNNN.parquet`, each shard written to a temp file and renamed,
so a reader (or a resumed run) only ever sees whole shards. Resume is by id: `existing_ids(dir)`
reads only the `id` column of the shards already there.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from catalog.errors import DraftsetError
from catalog.io import atomic_path

# Columns of data/normalized/* and data/mix/* shards (the common brief fixes them).
RECORD_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("repo_id", pa.string()),
        ("revision", pa.string()),
        ("config", pa.string()),
        ("split", pa.string()),
        ("row_index", pa.int64()),
        ("category", pa.string()),
        ("mode", pa.string()),
        ("prompt_hash", pa.string()),
        ("n_turns", pa.int64()),
        ("prompt_chars", pa.int64()),
        ("conversation", pa.string()),
    ]
)


def shard_path(directory: Path, number: int, prefix: str = "part") -> Path:
    """Shard number `number` of `directory`: `<prefix>-NNNNN.parquet`, the name `shard_paths` finds."""
    return Path(directory) / f"{prefix}-{number:05d}.parquet"


def shard_paths(directory: Path, prefix: str = "part") -> list[Path]:
    """Finished shards in name order (temp files start with '.' and never match)."""
    pattern = re.compile(rf"^{re.escape(prefix)}-\d{{5}}\.parquet$")
    if not Path(directory).is_dir():
        return []
    return sorted(p for p in Path(directory).iterdir() if pattern.match(p.name))


class ParquetShardWriter:
    """Buffer rows and write them as numbered parquet shards, each one atomically.

    Appends after the shards already in `directory` (resume), never overwrites one.
    Use as a context manager: the last partial shard is flushed on exit, also when the block
    fails (its rows are complete), unless a flush itself failed.
    """

    def __init__(
        self, directory: Path, schema: pa.Schema = RECORD_SCHEMA, prefix: str = "part", rows_per_shard: int = 10_000
    ):
        self.directory = Path(directory)
        self.schema = schema
        self.prefix = prefix
        self.rows_per_shard = rows_per_shard
        self._buffer: list[dict[str, Any]] = []
        existing = shard_paths(self.directory, prefix)
        self._next = int(existing[-1].stem.rsplit("-", 1)[1]) + 1 if existing else 0
        self.written: list[Path] = []
        self.rows_written = 0
        self._broken = False  # a flush failed: do not try again on exit and hide the first error

    def write(self, row: dict[str, Any]) -> None:
        self._buffer.append(row)
        if len(self._buffer) >= self.rows_per_shard:
            self.flush()

    def write_many(self, rows: Iterable[dict[str, Any]]) -> None:
        for row in rows:
            self.write(row)

    def flush(self) -> None:
        if not self._buffer:
            return
        self._broken = True
        try:
            # Column lists, not from_pylist: several times faster for wide string rows.
            table = pa.table(
                {name: [row.get(name) for row in self._buffer] for name in self.schema.names}, schema=self.schema
            )
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            raise DraftsetError(
                f"cannot write shard in {self.directory}: a row does not match the shard schema ({exc})"
            ) from exc
        path = shard_path(self.directory, self._next, self.prefix)
        try:
            with atomic_path(path) as tmp:
                pq.write_table(table, tmp, compression="zstd")
        except OSError as exc:  # full disk, permissions: say where, keep earlier shards intact
            raise DraftsetError(
                f"cannot write shard {path}: {exc}",
                hint="free disk space or fix permissions, then re-run: finished shards "
                "are kept and the run resumes by id",
            ) from exc
        self._broken = False
        self._next += 1
        self.written.append(path)
        self.rows_written += len(self._buffer)
        self._buffer = []

    def __enter__(self) -> ParquetShardWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        # Flush on success and on failure alike: every buffered row is complete and valid, so
        # keeping it is what makes an interrupted run resume where it stopped.
        if not self._broken:
            self.flush()


def existing_ids(directory: Path, prefix: str = "part", column: str = "id") -> set[str]:
    """Ids already written in `directory` (reads one column only)."""
    ids: set[str] = set()
    for path in shard_paths(directory, prefix):
        ids.update(pq.read_table(path, columns=[column]).column(column).to_pylist())
    return ids


def iter_rows(
    directories: Iterable[Path], columns: list[str] | None = None, prefix: str = "part", batch_size: int = 4_096
) -> Iterator[dict[str, Any]]:
    """Stream rows from the shards of several directories without loading them whole."""
    for batch in iter_batches((p for d in directories for p in shard_paths(d, prefix)), columns, batch_size):
        yield from batch.to_pylist()


def iter_batches(
    paths: Iterable[Path], columns: list[str] | None = None, batch_size: int = 4_096
) -> Iterator[pa.RecordBatch]:
    """Stream record batches of these shard files in order, one batch in memory at a time."""
    for path in paths:
        yield from pq.ParquetFile(path).iter_batches(batch_size=batch_size, columns=columns)


def read_table(directories: Iterable[Path], columns: list[str] | None = None, prefix: str = "part") -> pa.Table:
    """All shards of several directories as one table (for metadata columns, not conversations)."""
    tables = [pq.read_table(p, columns=columns) for d in directories for p in shard_paths(d, prefix)]
    if not tables:
        names = columns or RECORD_SCHEMA.names
        return pa.table(
            {n: pa.array([], RECORD_SCHEMA.field(n).type if n in RECORD_SCHEMA.names else pa.string()) for n in names}
        )
    return pa.concat_tables(tables, promote_options="default")
