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

from huggingface_hub import hf_hub_download
from huggingface_hub.errors import (
    EntryNotFoundError,
    GatedRepoError,
    HfHubHTTPError,
    LocalEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from adapters.files import count_rows, iter_file
from adapters.hub_probe import check_reachable
from adapters.spec import AdapterSpec, SourceSpec
from catalog.errors import DraftsetError


@dataclass(frozen=True, slots=True)
class RawRow:
    row_index: int
    row: dict[str, Any] | None
    error: str | None = None


def download(source: SourceSpec, filename: str, *, endpoint: str, token: str | None = None) -> Path:
    """Local path of one data file at the pinned revision (cached by huggingface_hub)."""
    where = f"{source.repo_id}@{source.revision[:12]} file {filename}"
    try:
        return Path(hf_hub_download(source.repo_id, filename, repo_type="dataset", revision=source.revision,
                                    endpoint=endpoint, token=token))
    except GatedRepoError as exc:
        raise DraftsetError(f"{source.repo_id} is gated: downloading {filename} needs a token",
                            hint="accept the dataset's terms on the Hub, then set HF_TOKEN") from exc
    except RepositoryNotFoundError as exc:
        raise DraftsetError(f"dataset {source.repo_id} not found on {endpoint}",
                            hint="check the repo id, or HF_ENDPOINT / HF_TOKEN for private data") from exc
    except RevisionNotFoundError as exc:
        raise DraftsetError(f"revision {source.revision} of {source.repo_id} not found on {endpoint}",
                            hint=f"re-propose the adapter for the current revision: "
                                 f"draftset adapters propose {source.repo_id}") from exc
    except LocalEntryNotFoundError as exc:  # the connection failed and the file is not cached
        raise DraftsetError(f"cannot fetch {where}: {endpoint} did not answer",
                            hint="check that the Hub is running and reachable, then retry") from exc
    except EntryNotFoundError as exc:
        raise DraftsetError(f"{where} not found on {endpoint}",
                            hint=f"re-propose the adapter: draftset adapters propose {source.repo_id}") from exc
    except (HfHubHTTPError, OSError) as exc:
        # OSError covers refused connections and a full disk while caching the file.
        raise DraftsetError(f"cannot fetch {where} from {endpoint}: {type(exc).__name__}: {exc}",
                            hint="is the Hub reachable? for the local fixture Hub run "
                                 "`draftset hub serve tests/fixtures/hub`") from exc


def _evenly_spaced(total: int, k: int) -> set[int]:
    if k >= total:
        return set(range(total))
    return {(i * total) // k for i in range(k)}


def iter_raw_rows(spec_or_source: AdapterSpec | SourceSpec, *, endpoint: str, token: str | None = None,
                  limit: int | None = None, sample: int | None = None) -> Iterator[RawRow]:
    """Rows of the source in order; `limit` stops early, `sample` picks rows evenly across all files."""
    source = spec_or_source.source if isinstance(spec_or_source, AdapterSpec) else spec_or_source
    check_reachable(endpoint)
    # Lazy: a full read starts streaming the first file before the later ones are downloaded.
    paths = ((name, download(source, name, endpoint=endpoint, token=token)) for name in source.data_files)
    yield from iter_local_rows(paths, limit=limit, sample=sample)


def iter_local_rows(paths: Iterable[tuple[str, Path]], *, limit: int | None = None,
                    sample: int | None = None) -> Iterator[RawRow]:
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
            if wanted is None or index in wanted:
                if limit is not None and produced >= limit:
                    return
                yield RawRow(index, row, error)
                produced += 1
            index += 1
