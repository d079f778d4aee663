"""Parse one local data file into rows: parquet, jsonl, json (array), csv/tsv, optionally gzipped.

Every reader yields `(row, error)` pairs and never raises for bad content: a malformed line, a
non-object row or an over-long line comes back as an error string naming file and line, so one bad
row is quarantined instead of killing the run (the `datasets` JSON builder aborts the whole file).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq

RowResult = tuple[dict[str, Any] | None, str | None]
FORMATS = ("parquet", "jsonl", "json", "csv", "tsv")
# A single raw row above this is refused with a reason rather than loaded (a runaway row is almost
# always a broken export, and ingest's length filter would drop it anyway).
MAX_ROW_BYTES = 32 * 1024 * 1024
PARQUET_BATCH_ROWS = 4096

csv.field_size_limit(min(sys.maxsize, 2**31 - 1))  # long answers exceed csv's 128 KB default


def file_format(name: str) -> str | None:
    """The reader for a data file name, or None when it is not a data file."""
    base = name.lower().removesuffix(".gz")
    for fmt, suffixes in (("parquet", (".parquet",)), ("jsonl", (".jsonl", ".ndjson")), ("json", (".json",)),
                          ("csv", (".csv",)), ("tsv", (".tsv",))):
        if base.endswith(suffixes):
            return fmt
    return None


def _open_text(path: Path) -> IO[str]:
    raw = gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb")
    return io.TextIOWrapper(raw, encoding="utf-8", errors="strict", newline="")


def count_rows(path: Path, name: str) -> int:
    """Rows in a file (parquet from its footer; others by a parse, the only reliable count)."""
    if file_format(name) == "parquet":
        return pq.ParquetFile(path).metadata.num_rows
    return sum(1 for _ in iter_file(path, name))


def iter_file(path: Path, name: str, wanted: set[int] | None = None) -> Iterator[RowResult]:
    """Rows of one file in order. `wanted` (file-local positions) lets parquet skip converting the other
    batches, which then yield (None, None) placeholders; text formats must parse every line anyway."""
    fmt = file_format(name)
    if fmt == "parquet":
        yield from _parquet(path, name, wanted)
    elif fmt == "jsonl":
        yield from _jsonl(path, name)
    elif fmt == "json":
        yield from _json(path, name)
    elif fmt in ("csv", "tsv"):
        yield from _csv(path, name, "\t" if fmt == "tsv" else ",")
    else:
        yield None, f"{name}: unsupported data file type (known: {', '.join(FORMATS)})"


def _parquet(path: Path, name: str, wanted: set[int] | None) -> Iterator[RowResult]:
    try:
        pf = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several types for a corrupt footer
        yield None, f"{name}: not a readable parquet file ({exc})"
        return
    offset = 0
    try:
        for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS):
            n = batch.num_rows
            if wanted is not None and not any(offset <= i < offset + n for i in wanted):
                yield from ((None, None) for _ in range(n))  # keep positions without converting rows
            else:
                yield from ((row, None) for row in batch.to_pylist())
            offset += n
    except (OSError, pa.ArrowException) as exc:
        # A corrupt data page: the footer still says how many rows are lost, so each one is reported
        # and the row indexes of later files do not shift.
        reason = f"{name}: rows from {offset} on are unreadable ({exc})"
        yield from ((None, reason) for _ in range(pf.metadata.num_rows - offset))


def _decode_object(text: str, where: str) -> RowResult:
    if len(text) > MAX_ROW_BYTES:
        return None, f"{where}: row is {len(text):,} bytes, over the {MAX_ROW_BYTES:,}-byte limit"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"{where}: invalid JSON ({exc.msg} at char {exc.pos})"
    if not isinstance(value, dict):
        return None, f"{where}: expected a JSON object, got {type(value).__name__}"
    return value, None


def _jsonl(path: Path, name: str) -> Iterator[RowResult]:
    with _open_text(path) as fh:
        lineno = 0
        while True:
            try:
                line = fh.readline()
            except UnicodeDecodeError as exc:
                yield None, f"{name}:{lineno + 1}: not UTF-8 text ({exc.reason}); rest of file unreadable"
                return
            if not line:
                return
            lineno += 1
            if line.strip():
                yield _decode_object(line, f"{name}:{lineno}")


def _json(path: Path, name: str) -> Iterator[RowResult]:
    try:
        with _open_text(path) as fh:
            data = json.load(fh)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        # Some `.json` files are really JSON Lines; fall back before giving up on the whole file.
        lines = _jsonl(path, name)
        first = next(lines, None)
        if first is not None and first[1] is None:
            yield first
            yield from lines
        else:
            yield None, f"{name}: not valid JSON or JSON Lines ({exc})"
        return
    if isinstance(data, dict):  # {"data": [...]} style wrappers: the one list of objects inside
        lists = [v for v in data.values() if isinstance(v, list)]
        data = lists[0] if len(lists) == 1 else [data]
    if not isinstance(data, list):
        yield None, f"{name}: expected a JSON array of objects, got {type(data).__name__}"
        return
    for i, item in enumerate(data):
        yield (item, None) if isinstance(item, dict) else \
            (None, f"{name}[{i}]: expected a JSON object, got {type(item).__name__}")


def _csv(path: Path, name: str, delimiter: str) -> Iterator[RowResult]:
    with _open_text(path) as fh:
        reader = csv.DictReader(fh, delimiter=delimiter)
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except (csv.Error, UnicodeDecodeError) as exc:
                yield None, f"{name}:{reader.line_num}: unreadable CSV ({exc}); rest of file skipped"
                return
            if None in row:  # more cells than header columns
                yield None, f"{name}:{reader.line_num}: {len(row[None])} cells beyond the header's columns"
            else:
                yield row, None
