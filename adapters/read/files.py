"""Parse one local data file into rows: parquet, Arrow, jsonl, json (array), csv/tsv, in any compression fsspec
reads (gzip, bz2, xz, zstd, zip). Which files are data and which reader each takes comes from `datasets`' own
extension table and fsspec's compression inference, not from a list kept here.

Every reader yields `(row, error)` pairs and never raises for bad content: a malformed line, a
non-object row, invalid UTF-8, a lone surrogate, a too-deep or huge-int row (the limits in
catalog/limits.py) or a corrupt parquet page comes back as a `RowProblem` (a str naming file and line,
with a quarantine reason), so one bad row is quarantined instead of killing the run (the `datasets`
JSON builder aborts the whole file). Text formats are read as bytes, line by line, and each line is
decoded on its own, so line numbers stay true and one bad byte loses one line.
"""

from __future__ import annotations

import csv
import io
import json
import lzma
import re
import sys
import zlib
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import IO, Any, cast

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
from fsspec.utils import infer_compression

from catalog import limits


class RowProblem(str):
    """Why one row could not be read: the message (a str, so callers may print it), plus the quarantine
    `reason` and where the row sits in its file (`file`, `line`: 1-based line, item or row position)."""

    reason: str = "malformed"
    file: str | None = None
    line: int | None = None

    @classmethod
    def of(
        cls, message: str, reason: str = "malformed", file: str | None = None, line: int | None = None
    ) -> RowProblem:
        problem = cls(message)
        problem.reason, problem.file, problem.line = reason, file, line
        return problem


RowResult = tuple[dict[str, Any] | None, str | None]
FORMATS = ("parquet", "arrow", "jsonl", "json", "csv", "tsv")
# A single raw row above this is refused with a reason rather than loaded (a runaway row is almost
# always a broken export, and ingest's length filter would drop it anyway).
MAX_ROW_BYTES = limits.MAX_ROW_BYTES
PARQUET_BATCH_ROWS = 4096

# long answers exceed csv's 128 KB default; a field past the row limit is refused by the reader itself
csv.field_size_limit(min(sys.maxsize, MAX_ROW_BYTES))


def compression(name: str) -> str | None:
    """The compression of a data file as fsspec infers it from the name (gzip, bz2, xz, zstd, zip, ...)."""
    return infer_compression(name)


def _uncompressed(name: str) -> str:
    return name.rsplit(".", 1)[0] if compression(name) else name


@lru_cache(maxsize=1)
def _extension_modules() -> dict[str, tuple[str, dict[str, Any]]]:
    """`datasets`' own table of data-file extensions → packaged builder (json, csv, parquet, arrow, text,
    imagefolder, webdataset, ...): the files we read are exactly those `load_dataset` reads, with no list of
    our own to drift. Imported lazily: `datasets` is heavy and most callers never need it."""
    from datasets.packaged_modules import _EXTENSION_TO_MODULE

    return dict(_EXTENSION_TO_MODULE)


def datasets_module(name: str) -> str | None:
    """The `datasets` builder that reads this data file (compression suffix removed), or None."""
    base = _uncompressed(name.rsplit("/", 1)[-1])
    if "." not in base:
        return None
    ext = "." + base.rsplit(".", 1)[-1]
    table = _extension_modules()
    entry = table.get(ext) or table.get(ext.lower())
    return entry[0] if entry else None


def file_format(name: str) -> str | None:
    """The reader for a data file name, or None when it is not a data file we read as rows."""
    module = datasets_module(name)
    base = _uncompressed(name).lower()
    if module == "json":
        return "jsonl" if base.endswith((".jsonl", ".ndjson")) else "json"
    if module == "csv":
        return "tsv" if base.endswith(".tsv") else "csv"
    if module in ("parquet", "arrow"):
        return module
    return None


class _Decompressed(io.RawIOBase):
    """A decompressor's bytes, at most `budget` of them: past it, reading is a LimitExceeded naming the file
    (a gzip of empty lines, or of one endless field, gives gigabytes without a single row to count)."""

    def __init__(self, stream: IO[bytes], name: str, size: int):
        self._stream, self._name, self._size, self._given = stream, name, size, 0
        self._budget = limits.decoded_budget(size)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._stream.read(len(buffer))
        self._given += len(data)
        if self._given > self._budget:
            raise limits.LimitExceeded(
                "file_over_limit",
                f"{self._name}: decompresses to more than {self._budget:,} bytes "
                f"(over {limits.MAX_DECODED_RATIO}x its {self._size:,} bytes on disk: a bomb?)",
            )
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._stream.close()
        super().close()


def _open_binary(path: Path) -> IO[bytes]:
    """The file's bytes, decompressed by fsspec when its name says it is compressed, up to the decoded budget
    of catalog/limits.py; a buffer gives every reader the same file API (zstd cannot readline(size))."""
    kind = compression(path.name)
    if kind is None:
        return open(path, "rb")
    stream = fsspec.open(str(path), "rb", compression=kind).open()
    return cast(IO[bytes], io.BufferedReader(_Decompressed(stream, path.name, path.stat().st_size)))


# What a broken compressed stream or a vanishing file raises mid-read (gzip: EOFError/BadGzipFile/zlib.error).
_READ_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError)


def count_rows(path: Path, name: str) -> int:
    """Results `iter_file` yields for a file (parquet from its footer; others by a parse, the only
    reliable count). An unreadable parquet footer is one result: the one problem reported for it."""
    if file_format(name) == "parquet" and compression(name) is None:
        try:
            return pq.ParquetFile(path).metadata.num_rows
        except Exception:
            return 1
    return sum(1 for _ in iter_file(path, name))


def iter_file(path: Path, name: str, wanted: set[int] | None = None) -> Iterator[RowResult]:
    """Rows of one file in order. `wanted` (file-local positions) lets parquet skip converting the other
    batches, which then yield (None, None) placeholders; text formats must parse every line anyway.

    Each reader handles bad rows itself; this guard is the last resort for a library raising something
    no reader expected: the file ends with one problem, and the run goes on with the next file."""
    fmt = file_format(name)
    readers = {
        "parquet": lambda: _parquet(path, name, wanted),
        "arrow": lambda: _arrow(path, name),
        "jsonl": lambda: _jsonl(path, name),
        "json": lambda: _json(path, name),
        "csv": lambda: _csv(path, name, ","),
        "tsv": lambda: _csv(path, name, "\t"),
    }
    if fmt not in readers:
        yield (
            None,
            RowProblem.of(
                f"{name}: unsupported data file type (known: {', '.join(FORMATS)})", "unsupported_file", name
            ),
        )
        return
    produced = 0
    try:
        for result in readers[fmt]():
            produced += 1
            yield result
    except limits.LimitExceeded as exc:  # a whole-file limit (decompressed bytes): named, with its reason
        yield None, RowProblem.of(f"{exc} (after {produced} rows)", exc.reason, name, produced + 1)
    except Exception as exc:  # noqa: BLE001 - untrusted bytes; the message names the file and position
        yield (
            None,
            RowProblem.of(
                f"{name}: reading stopped after {produced} rows ({type(exc).__name__}: {_short(exc)})",
                "unreadable_file",
                name,
                produced + 1,
            ),
        )


def _parquet(path: Path, name: str, wanted: set[int] | None) -> Iterator[RowResult]:
    """Row group by row group: a corrupt page loses the rows of its group only (each one reported, so
    later row indexes do not shift), and one row pyarrow cannot convert loses that row only."""
    try:
        pf = pq.ParquetFile(path)
        groups = [pf.metadata.row_group(g).num_rows for g in range(pf.metadata.num_row_groups)]
    except Exception as exc:  # pyarrow raises several types for a truncated or corrupt footer
        yield None, RowProblem.of(f"{name}: not a readable parquet file ({_short(exc)})", "unreadable_file", name)
        return
    offset = 0
    for group, n in enumerate(groups):
        if wanted is not None and not any(offset <= i < offset + n for i in wanted):
            yield from ((None, None) for _ in range(n))  # keep positions without converting rows
            offset += n
            continue
        done = 0
        try:
            for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, row_groups=[group]):
                yield from _batch_rows(batch, name, offset + done)
                done += batch.num_rows
        except Exception as exc:  # a corrupt data page: the footer still says how many rows are lost
            for i in range(offset + done, offset + n):
                yield (
                    None,
                    RowProblem.of(
                        f"{name}: rows from {offset + done} to {offset + n - 1} (row group "
                        f"{group}) are unreadable ({_short(exc)})",
                        "unreadable_rows",
                        name,
                        i + 1,
                    ),
                )
        offset += n


def _arrow_batches(path: Path) -> Iterator[pa.RecordBatch]:
    """Arrow IPC batches, as `datasets` writes them (a stream) or from a file with a footer, read one message
    at a time from disk (never the whole file: a sparse 2 GB file is mostly a hole). A compressed file is
    read through the decompressed-bytes budget; the file format needs seeking, so it is read whole then."""
    if compression(path.name) is None:
        try:
            stream = pa.ipc.open_stream(pa.OSFile(str(path)))
        except pa.ArrowInvalid:  # not a stream: the file format, footer first
            ipc = pa.ipc.open_file(pa.OSFile(str(path)))
            yield from (ipc.get_batch(i) for i in range(ipc.num_record_batches))
            return
        yield from stream
        return
    with _open_binary(path) as fh:
        try:
            stream = pa.ipc.open_stream(pa.PythonFile(fh, mode="r"))
        except pa.ArrowInvalid:
            stream = None
        if stream is not None:
            yield from stream
            return
    with _open_binary(path) as fh:
        ipc = pa.ipc.open_file(pa.py_buffer(fh.read()))
        yield from (ipc.get_batch(i) for i in range(ipc.num_record_batches))


def _arrow(path: Path, name: str) -> Iterator[RowResult]:
    """Arrow IPC batch by batch; each batch decoded on its own (in the capped child: adapters/read/capped.py)."""
    offset = 0
    try:
        for batch in _arrow_batches(path):
            yield from _batch_rows(batch, name, offset)
            offset += batch.num_rows
    except pa.ArrowInvalid as exc:
        where = "not a readable Arrow file" if offset == 0 else f"unreadable after {offset} rows"
        yield None, RowProblem.of(f"{name}: {where} ({_short(exc)})", "unreadable_file", name, offset + 1)


def _batch_rows(batch: pa.RecordBatch, name: str, offset: int) -> Iterator[RowResult]:
    try:
        rows = batch.to_pylist()
    except Exception:  # one cell pyarrow cannot turn into Python (dates out of range, ...): row by row
        rows = []
        for i in range(batch.num_rows):
            try:
                rows.append(batch.slice(i, 1).to_pylist()[0])
            except Exception as exc:
                rows.append(
                    RowProblem.of(
                        f"{name}: row {offset + i}: cannot convert ({_short(exc)})",
                        "unreadable_rows",
                        name,
                        offset + i + 1,
                    )
                )
    for i, row in enumerate(rows):
        if isinstance(row, RowProblem):
            yield None, row
            continue
        try:
            limits.check_value(row, f"{name}: row {offset + i}")
        except limits.LimitExceeded as exc:
            yield None, RowProblem.of(str(exc), exc.reason, name, offset + i + 1)
            continue
        yield row, None


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


def _decode_object(data: bytes | str, name: str, line: int | None, where: str) -> RowResult:
    """One row's text → dict, under every limit in catalog/limits.py; any failure is a RowProblem."""
    if len(data) > MAX_ROW_BYTES:
        return None, RowProblem.of(
            f"{where}: row is {len(data):,} bytes, over the {MAX_ROW_BYTES:,}-byte limit", "too_large", name, line
        )
    try:
        value = limits.loads_limited(data, where)
    except limits.LimitExceeded as exc:
        return None, RowProblem.of(str(exc), exc.reason, name, line)
    if not isinstance(value, dict):
        return None, RowProblem.of(
            f"{where}: expected a JSON object, got {type(value).__name__}", "not_an_object", name, line
        )
    return value, None


def _jsonl(path: Path, name: str) -> Iterator[RowResult]:
    """Bytes line by line, each decoded on its own: invalid UTF-8 or a bad line loses that line only,
    and line numbers stay true (a text-mode reader stops at the first undecodable byte)."""
    lineno = 0
    try:
        with _open_binary(path) as fh:
            while True:
                line = fh.readline(MAX_ROW_BYTES + 1)
                if not line:
                    return
                lineno += 1
                if lineno == 1 and line.startswith(b"\xef\xbb\xbf"):
                    line = line[3:]  # a UTF-8 byte-order mark
                if len(line) > MAX_ROW_BYTES and not line.endswith(b"\n"):
                    size = len(line)
                    while line and not line.endswith(b"\n"):  # skip the rest of the line unread
                        line = fh.readline(1 << 20)
                        size += len(line)
                    yield (
                        None,
                        RowProblem.of(
                            f"{name}:{lineno}: row is {size:,} bytes, over the {MAX_ROW_BYTES:,}-byte limit",
                            "too_large",
                            name,
                            lineno,
                        ),
                    )
                    continue
                if line.strip():
                    yield _decode_object(line, name, lineno, f"{name}:{lineno}")
    except _READ_ERRORS as exc:  # truncated gzip, file gone: the rows after this point cannot be counted
        yield (
            None,
            RowProblem.of(
                f"{name}:{lineno + 1}: unreadable from here on ({_short(exc)}); rest of file skipped",
                "unreadable_file",
                name,
                lineno + 1,
            ),
        )


_ARRAY_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},]', re.S)


def _array_items(text: str) -> Iterator[tuple[int, str]] | None:
    """(start offset, text) of each top-level item of a JSON array, without parsing: for an array
    whose items are too deep or too odd to parse in one go. None when the text is not an array."""
    stripped = text.lstrip()
    if not stripped.startswith("["):
        return None

    def items() -> Iterator[tuple[int, str]]:
        depth, start = 0, None
        for m in _ARRAY_TOKEN.finditer(text):
            tok = m.group()
            if tok in "[{":
                depth += 1
                if depth == 1:
                    start = m.end()
            elif tok in "]}":
                depth -= 1
                if depth == 0:
                    if start is not None and text[start : m.start()].strip():
                        yield start, text[start : m.start()]
                    return
            elif tok == "," and depth == 1:
                assert start is not None  # depth 1 was reached through "[", which set it
                yield start, text[start : m.start()]
                start = m.end()
        if start is not None and text[start:].strip():  # truncated file: the unfinished last item
            yield start, text[start:]

    return items()


def _json(path: Path, name: str) -> Iterator[RowResult]:
    try:
        with _open_binary(path) as fh:
            raw = fh.read()
        text = raw.decode("utf-8-sig")
    except _READ_ERRORS as exc:
        yield None, RowProblem.of(f"{name}: unreadable ({_short(exc)})", "unreadable_file", name)
        return
    except UnicodeDecodeError:
        yield from _json_lines_or_error(path, name, "not UTF-8 text")
        return
    data: Any = None
    try:
        if limits.json_depth(text) <= limits.MAX_JSON_DEPTH + 1:  # +1: the array around the items
            data = limits.loads_limited(text, name) if len(text) <= MAX_ROW_BYTES else json.loads(text)
    except limits.LimitExceeded as exc:
        if exc.reason == "invalid_json":
            yield from _json_lines_or_error(path, name, str(exc))
            return
    except json.JSONDecodeError as exc:
        yield from _json_lines_or_error(path, name, f"invalid JSON ({exc.msg} at char {exc.pos})")
        return
    except (ValueError, RecursionError):  # huge ints or too deep somewhere: split the items instead
        pass
    if data is None:
        items = _array_items(text)
        if items is None:
            yield (
                None,
                RowProblem.of(f"{name}: a JSON document too deep or too large to read as one value", "too_deep", name),
            )
            return
        for i, (start, item) in enumerate(items):
            line = text.count("\n", 0, start) + 1
            yield _decode_object(item.strip(), name, line, f"{name}[{i}] (line {line})")
        return
    if isinstance(data, dict):  # {"data": [...]} style wrappers: the one list of objects inside
        lists = [v for v in data.values() if isinstance(v, list)]
        data = lists[0] if len(lists) == 1 else [data]
    if not isinstance(data, list):
        yield (
            None,
            RowProblem.of(
                f"{name}: expected a JSON array of objects, got {type(data).__name__}", "not_an_object", name
            ),
        )
        return
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            yield (
                None,
                RowProblem.of(
                    f"{name}[{i}]: expected a JSON object, got {type(item).__name__}", "not_an_object", name, i + 1
                ),
            )
            continue
        try:
            limits.check_value(item, f"{name}[{i}]")
        except limits.LimitExceeded as exc:
            yield None, RowProblem.of(str(exc), exc.reason, name, i + 1)
            continue
        yield item, None


def _json_lines_or_error(path: Path, name: str, why: str) -> Iterator[RowResult]:
    """Some `.json` files are really JSON Lines: read them so before giving up on the whole file."""
    lines = _jsonl(path, name)
    first = next(lines, None)
    if first is not None and first[1] is None:
        yield first
        yield from lines
    else:
        yield None, RowProblem.of(f"{name}: not valid JSON or JSON Lines ({why})", "unreadable_file", name)


def _has_bad_text(row: dict[str, Any]) -> bool:
    try:
        for key, value in row.items():
            str(key).encode("utf-8")
            if isinstance(value, str):
                value.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


class _RecordTooLarge(Exception):
    """The CSV record being read passed MAX_ROW_BYTES: the rest of its line was skipped unread."""


class _BoundedLines:
    """The text's lines for csv.reader, none longer than MAX_ROW_BYTES and no record (lines since `start()`)
    over it: csv holds a whole line before it checks any field, so one 1 GB field cost gigabytes."""

    def __init__(self, fh: IO[str]):
        self._fh, self.record = fh, 0

    def start(self) -> None:
        self.record = 0

    def __iter__(self) -> _BoundedLines:
        return self

    def __next__(self) -> str:
        line = self._fh.readline(MAX_ROW_BYTES + 1)
        if not line:
            raise StopIteration
        self.record += len(line)
        if self.record > MAX_ROW_BYTES:
            while line and not line.endswith("\n"):  # skip the rest of the line, never holding it
                line = self._fh.readline(1 << 20)
            self.record = 0
            raise _RecordTooLarge
        return line


def _csv(path: Path, name: str, delimiter: str) -> Iterator[RowResult]:
    """Undecodable bytes are kept as surrogate escapes so the reader goes on; that row alone is refused.
    Lines come through _BoundedLines, so a runaway field or record is refused without being built."""
    line = 0
    try:
        with _open_binary(path) as raw:
            fh = io.TextIOWrapper(raw, encoding="utf-8-sig", errors="surrogateescape", newline="")
            lines = _BoundedLines(fh)
            reader = csv.DictReader(lines, delimiter=delimiter)
            while True:
                lines.start()
                try:
                    row = next(reader)
                except StopIteration:
                    return
                except _RecordTooLarge:  # csv resets its parser at the next record
                    line = reader.line_num + 1
                    yield (
                        None,
                        RowProblem.of(
                            f"{name}:{line}: record over the {MAX_ROW_BYTES:,}-byte limit (skipped unread)",
                            "too_large",
                            name,
                            line,
                        ),
                    )
                    continue
                except csv.Error as exc:
                    if reader.line_num == line:  # no progress: the reader cannot resync
                        yield (
                            None,
                            RowProblem.of(
                                f"{name}:{line}: unreadable CSV ({exc}); rest of file skipped",
                                "unreadable_file",
                                name,
                                line,
                            ),
                        )
                        return
                    line = reader.line_num
                    yield None, RowProblem.of(f"{name}:{line}: unreadable CSV ({exc})", "malformed", name, line)
                    continue
                line = reader.line_num
                if None in row:  # more cells than header columns
                    yield (
                        None,
                        RowProblem.of(
                            f"{name}:{line}: {len(row[None])} cells beyond the header's columns",
                            "malformed",
                            name,
                            line,
                        ),
                    )
                elif _has_bad_text(row):
                    yield None, RowProblem.of(f"{name}:{line}: not UTF-8 text", "invalid_utf8", name, line)
                elif sum(len(v) for v in row.values() if isinstance(v, str)) > MAX_ROW_BYTES:
                    yield (
                        None,
                        RowProblem.of(
                            f"{name}:{line}: row over the {MAX_ROW_BYTES:,}-byte limit", "too_large", name, line
                        ),
                    )
                else:
                    yield row, None
    except _READ_ERRORS as exc:
        yield (
            None,
            RowProblem.of(
                f"{name}:{line + 1}: unreadable from here on ({_short(exc)}); rest of file skipped",
                "unreadable_file",
                name,
                line + 1,
            ),
        )
