"""Crash-safe outputs of one regeneration: every input id ends in exactly one of three places.

- `results-<run>-<seq>.parquet`: finished rows, buffered and written as whole shards (temp file, then
  rename), so a shard is either complete or absent; a kill loses only the unwritten buffer, and those
  ids are simply answered again on the next run.
- `errors.jsonl` / `skipped.jsonl`: one JSON line per row, flushed as it is written. A kill can tear
  only the last line; `recover()` cuts a torn tail before the next run appends.
On start the three are read back into the set of done ids: resume is by id, never by line count.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from catalog.errors import DraftsetError
from catalog.io import atomic_path
from catalog.shards import ParquetShardWriter

RESULT_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("repo_id", pa.string()),
        ("category", pa.string()),
        ("mode", pa.string()),
        ("origin", pa.string()),  # regenerated | native_passthrough
        ("partition", pa.string()),
        ("conversation", pa.string()),
        ("turns", pa.string()),  # JSON: per answered turn finish_reason, usage, model, endpoint, attempts
        ("model", pa.string()),
        ("sampling", pa.string()),
        ("finish_reason", pa.string()),
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        ("run_id", pa.string()),
    ]
)
ERRORS, SKIPPED = "errors.jsonl", "skipped.jsonl"
GENERATION_FILE = "generation.json"  # sampling settings of the rows here (a resume must match)


def result_shards(out_dir: Path) -> list[Path]:
    return sorted(out_dir.glob("results-*.parquet"))


def _repair_jsonl(path: Path) -> list[dict[str, Any]]:
    """Entries of a journal; a torn last line (kill mid-write) is cut off, anything else is an error."""
    if not path.exists():
        return []
    raw = path.read_bytes()
    complete, _, tail = raw.rpartition(b"\n")
    if tail:  # the last write never finished: that row was not recorded and will be redone
        with atomic_path(path) as tmp:
            tmp.write_bytes(complete + b"\n" if complete else b"")
    entries = []
    for number, line in enumerate(complete.splitlines(), 1):
        try:
            entries.append(json.loads(line))
        except ValueError as exc:
            raise DraftsetError(
                f"{path} line {number} is not JSON ({exc})",
                hint="the file was edited by hand; fix or remove that line, then rerun",
            ) from exc
    return entries


def recover(out_dir: Path, retry_errors: bool = False) -> dict[str, set[str]]:
    """Clean up after a killed run and return the ids already done in `out_dir`, by outcome."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in out_dir.glob(".*.tmp"):  # temp files of writes that never got renamed
        stale.unlink()
    errors_path = out_dir / ERRORS
    errors = _repair_jsonl(errors_path)
    if retry_errors and errors:
        errors_path.rename(out_dir / f"errors-retried-{datetime.now():%Y%m%d-%H%M%S}.jsonl")
        errors = []
    done = {
        "results": set(),
        "errors": {e["id"] for e in errors},
        "skipped": {e["id"] for e in _repair_jsonl(out_dir / SKIPPED)},
    }
    for shard in result_shards(out_dir):
        done["results"].update(pq.read_table(shard, columns=["id"]).column("id").to_pylist())
    return done


class RegenStore:
    """The outputs of one run: result rows through ingest's ParquetShardWriter (atomic shards named
    results-<run_id>-NNNNN.parquet, a full one every `flush_rows`), and also flushed every
    `flush_seconds` so a slow run loses little to a kill; errors/skipped journals appended line by line.
    Use as a context manager: on exit the last rows are written and the journals closed."""

    def __init__(self, out_dir: Path, run_id: str, flush_rows: int, flush_seconds: float):
        self.out_dir, self.run_id, self.flush_seconds = out_dir, run_id, flush_seconds
        self._shards = ParquetShardWriter(out_dir, RESULT_SCHEMA, prefix=f"results-{run_id}", rows_per_shard=flush_rows)
        self._last_flush = time.monotonic()
        self._journals: dict[str, Any] = {}

    def add_result(self, row: dict[str, Any]) -> None:
        written = len(self._shards.written)
        self._shards.write(row)
        if len(self._shards.written) > written:  # a full shard went out: the clock starts again
            self._last_flush = time.monotonic()
        self.maybe_flush()

    def add_error(self, entry: dict[str, Any]) -> None:
        self._append(ERRORS, entry)

    def add_skipped(self, entry: dict[str, Any]) -> None:
        self._append(SKIPPED, entry)

    def _append(self, name: str, entry: dict[str, Any]) -> None:
        handle = self._journals.get(name)
        if handle is None:
            handle = self._journals[name] = (self.out_dir / name).open("a", encoding="utf-8")
        handle.write(json.dumps({**entry, "run_id": self.run_id}, ensure_ascii=False, default=str) + "\n")
        handle.flush()

    def maybe_flush(self) -> None:
        if time.monotonic() - self._last_flush >= self.flush_seconds:
            self._shards.flush()
            self._last_flush = time.monotonic()

    def __enter__(self) -> RegenStore:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        for handle in self._journals.values():
            handle.close()
        self._journals.clear()
        self._shards.__exit__(*exc_info)  # writes the buffered rows unless writing them just failed


def totals(out_dir: Path) -> dict[str, int]:
    """Rows per outcome on disk (what the manifest and `draftset status` report)."""
    n_results = sum(pq.read_metadata(p).num_rows for p in result_shards(out_dir))
    lines = {}
    for name in (ERRORS, SKIPPED):
        path = out_dir / name
        lines[name] = sum(1 for _ in path.open("rb")) if path.exists() else 0
    return {"results": n_results, "errors": lines[ERRORS], "skipped": lines[SKIPPED]}
