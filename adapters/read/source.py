"""Raw rows of one dataset revision, read from the Hub through huggingface_hub.

`iter_raw_rows` streams the data files of a pinned (repo, revision, config, split) in order, giving
every row a stable global `row_index` (file order, then position). Malformed content comes back as a
`RawRow` with `error` set (never an exception), so callers quarantine it with its index. Sampling
spreads evenly over ALL files: schema detection from the first rows of one file is how other tools
miss the file whose rows differ.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.read.capped import count_rows, iter_file  # decoded under the memory cap where it matters
from adapters.spec import AdapterSpec, SourceSpec
from catalog.hub import HubClient, check_reachable


@dataclass(frozen=True, slots=True)
class RawRow:
    row_index: int
    row: dict[str, Any] | None
    error: str | None = None


def download(source: SourceSpec, filename: str, *, endpoint: str, token: str | None = None) -> Path:
    """Local path of one data file at the pinned revision (cached by huggingface_hub); Hub failures
    (gated, missing repo/revision/file, dead endpoint) are one DraftsetError from the shared Hub client."""
    return HubClient(endpoint, token).download(source.repo_id, filename, source.revision)


def _evenly_spaced(total: int, k: int) -> set[int]:
    if k >= total:
        return set(range(total))
    return {(i * total) // k for i in range(k)}


def iter_raw_rows(
    spec_or_source: AdapterSpec | SourceSpec,
    *,
    endpoint: str,
    token: str | None = None,
    limit: int | None = None,
    sample: int | None = None,
) -> Iterator[RawRow]:
    """Rows of the source in order; `limit` stops early, `sample` picks rows evenly across all files."""
    source = spec_or_source.source if isinstance(spec_or_source, AdapterSpec) else spec_or_source
    check_reachable(endpoint)
    # Lazy: a full read starts streaming the first file before the later ones are downloaded.
    paths = ((name, download(source, name, endpoint=endpoint, token=token)) for name in source.data_files)
    yield from iter_local_rows(paths, limit=limit, sample=sample)


def iter_local_rows(
    paths: Iterable[tuple[str, Path]], *, limit: int | None = None, sample: int | None = None
) -> Iterator[RawRow]:
    """The same stream over (name, local path) pairs (Hub downloads, tests, benchmarks)."""
    wanted: set[int] | None = None
    if sample is not None:  # sampling needs every file's row count first
        paths = list(paths)
        wanted = _evenly_spaced(sum(count_rows(path, name) for name, path in paths), sample)
    yield from _rows(paths, wanted, limit)


def _rows(paths: Iterable[tuple[str, Path]], wanted: set[int] | None, limit: int | None) -> Iterator[RawRow]:
    index = produced = 0
    for name, path in paths:
        offset = index
        local_wanted = None if wanted is None else {i - offset for i in wanted if i >= offset}
        for row, error in iter_file(path, name, local_wanted):
            # a refused file is reported even when sampling skips its position: it is the file's one result
            if wanted is None or index in wanted or getattr(error, "reason", None) == "file_over_limit":
                if limit is not None and produced >= limit:
                    return
                yield RawRow(index, row, error)
                produced += 1
            index += 1
