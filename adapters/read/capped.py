"""Data files decoded only where memory is capped: `iter_file` and `count_rows` of adapters/read/files.py,
run in a child process for every format whose decoded size the file does not bound.

A 1.3 KB parquet (or Arrow IPC) file of dictionary pages decodes to ~10 GB, a compressed stream (gzip, bz2,
xz, zstd, ...) to any size, and a JSON array file is parsed whole: for those the readers run in a forkserver
child under the address-space cap of catalog/limits.py (MAX_WORKER_MEMORY) and the per-file wall clock
(MAX_FILE_READ_S), and rows come back in chunks bounded by bytes (catalog/isolate.py). A file over a limit
is one named refusal saying which limit, with its size on disk (reason `file_over_limit`), and the rest of
the dataset is read. Plain JSONL/CSV/TSV are read here: their readers already bound each row
(MAX_ROW_BYTES) and never hold more than one row, and their cost is linear in their size on disk.

Wrapping, not rewriting: the readers stay adapters/read/files.py's, so every format rule lives in one place.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path

from adapters.read import files
from adapters.read.files import RowProblem, RowResult
from catalog import limits
from catalog.errors import DraftsetError
from catalog.isolate import ChildDied, OverBudget, TimedOut, stream_isolated

# Rows per parquet batch inside the child: small, so one batch of huge (dictionary-expanded) cells stays
# under the cap while the rows before it come back (files.py reads 4,096 rows a batch in-process).
CHILD_PARQUET_BATCH_ROWS = 64
_MEMORY_WORDS = ("MemoryError", "out of memory", "Cannot allocate", "malloc of size", "bad_alloc")
# Imported once by the forkserver, so each child forks with them loaded. files.file_format imports `datasets`'
# extension table lazily: without it here every child imported `datasets` afresh (~2 s per file read, measured).
_PRELOAD = ("adapters.read.files", "datasets.packaged_modules")


def decoded_in_child(name: str) -> bool:
    """Formats whose decoded size (or reading time) the file does not bound: read only under the caps."""
    return files.compression(name) is not None or files.file_format(name) in ("parquet", "arrow", "json")


def _disk_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def decoded_budget(path: Path) -> int:
    """Bytes of decoded rows the file may give (limits.MAX_DECODED_RATIO times its size, with a floor)."""
    return limits.decoded_budget(_disk_size(path))


def _parent_limits() -> dict[str, float]:
    """This process's decoding limits, for the child to read under (the forkserver imported its own copy)."""
    return {"MIN_DECODED_BUDGET": limits.MIN_DECODED_BUDGET, "MAX_DECODED_RATIO": limits.MAX_DECODED_RATIO}


def _adopt(parent_limits: dict[str, float]) -> None:
    for key, value in parent_limits.items():
        setattr(limits, key, value)


def _refusal(name: str, path: Path, line: int | None, why: str | None = None) -> RowProblem:
    why = why or f"decoding it needs more than the {limits.MAX_WORKER_MEMORY // 2**20:,} MiB memory limit"
    return RowProblem.of(
        f"{name}: refused: {why} ({_disk_size(path):,} bytes on disk); the rest of the dataset is read",
        "file_over_limit",
        name,
        line,
    )


def _read_in_child(
    path: str, name: str, wanted: set[int] | None, parent_limits: dict[str, float]
) -> Iterator[RowResult]:
    _adopt(parent_limits)
    files.PARQUET_BATCH_ROWS = CHILD_PARQUET_BATCH_ROWS  # this process only (a forked child)
    for row, error in files.iter_file(Path(path), name, wanted):
        if error is not None and any(w in error for w in _MEMORY_WORDS):
            yield None, _refusal(name, Path(path), getattr(error, "line", None))
            return  # the file is over the limit: what follows would fail the same way
        yield row, error


def _count_in_child(path: str, name: str, budget: int, parent_limits: dict[str, float]) -> Iterator[int]:
    """The row count; a text file is parsed to count it, under the same decoded-bytes budget as reading
    (-1: over it, so the file counts as the one refusal that reading it gives)."""
    _adopt(parent_limits)
    if files.file_format(name) == "parquet":
        yield files.count_rows(Path(path), name)  # from the footer
        return
    n = decoded = 0
    for row, error in files.iter_file(Path(path), name):
        decoded += len(pickle.dumps(row if row is not None else error, protocol=pickle.HIGHEST_PROTOCOL))
        if decoded > budget:
            yield -1
            return
        n += 1
    yield n


def iter_file(path: Path, name: str, wanted: set[int] | None = None) -> Iterator[RowResult]:
    """files.iter_file, decoded under the memory cap when the format needs it (same results)."""
    if not decoded_in_child(name):
        yield from files.iter_file(path, name, wanted)
        return
    produced = 0
    try:
        for result in stream_isolated(
            _read_in_child,
            str(path),
            name,
            wanted,
            _parent_limits(),
            what=f"reading {name}",
            preload=_PRELOAD,
            max_bytes=decoded_budget(path),
            deadline_s=limits.MAX_FILE_READ_S,
        ):
            produced += 1
            yield result
    except OverBudget as exc:
        why = f"it decodes to more than {exc.total:,} bytes (over {limits.MAX_DECODED_RATIO}x its size: a bomb?)"
        yield None, _refusal(name, path, produced + 1, why)
    except TimedOut as exc:
        limit = "idle limit (no row or end)" if exc.idle else "per-file time limit"
        why = f"reading it passed the {exc.limit_s:g} s {limit} after {produced} rows"
        yield None, _refusal(name, path, produced + 1, why)
    except ChildDied as exc:
        why = f"decoding it ended the capped reader ({exc.why}; memory limit {limits.MAX_WORKER_MEMORY // 2**20:,} MiB)"
        yield None, _refusal(name, path, produced + 1, why)
    except DraftsetError as exc:  # a silent or failing child: the file ends with one problem, like files.py
        yield (
            None,
            RowProblem.of(
                f"{name}: reading stopped after {produced} rows ({exc})", "unreadable_file", name, produced + 1
            ),
        )


def count_rows(path: Path, name: str) -> int:
    """files.count_rows under the memory cap when the format needs it; a file the child cannot count is
    one result (the refusal iter_file then gives)."""
    if not decoded_in_child(name):
        return files.count_rows(path, name)
    try:
        (n,) = stream_isolated(
            _count_in_child,
            str(path),
            name,
            decoded_budget(path),
            _parent_limits(),
            what=f"counting {name}",
            preload=_PRELOAD,
            deadline_s=limits.MAX_FILE_READ_S,
        )
    except DraftsetError:
        return 1
    return 1 if n < 0 else n


def unmatched_data_files(repo_files: list[str], resolved: list[str]) -> str | None:
    """A data file whose name holds a control character (a newline, an escape) matches no `datasets` pattern
    and would be left out without a word: the reason line naming such files (JSON-escaped), or None."""
    from catalog.untrusted import is_plain, label_word

    skipped = [n for n in repo_files if files.file_format(n) and n not in resolved and not is_plain(n)]
    if not skipped:
        return None
    return f"left out {len(skipped)} data file(s) whose name holds a control character (rename them): " + ", ".join(
        label_word(n) for n in skipped
    )
