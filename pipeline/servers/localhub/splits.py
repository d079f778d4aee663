"""A repo's configs → splits → data files, and reading one split into an Arrow table (for the viewer).

Split layout uses `datasets`' own pattern logic (card `configs:` via sanitize_patterns, otherwise the
file-name conventions of get_data_patterns) so the viewer shows exactly the splits `load_dataset` finds.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pyarrow as pa

from pipeline.servers.localhub.repo import DATA_FORMATS, RepoFile, RepoScan


class DataReadError(Exception):
    """A data file exists but cannot be read as a table (malformed JSON, mixed types, ...)."""


@dataclass(frozen=True)
class Split:
    config: str
    split: str
    files: tuple[RepoFile, ...]


def _resolve(scan: RepoScan, patterns: list[str]) -> tuple[RepoFile, ...]:
    from datasets.data_files import resolve_pattern

    found: dict[str, RepoFile] = {}
    for pattern in patterns:
        try:
            matches = resolve_pattern(pattern, base_path=str(scan.root))
        except FileNotFoundError:
            continue
        for match in matches:
            rel = Path(match).resolve().relative_to(scan.root.resolve()).as_posix()
            if rel in scan.files and Path(rel).suffix in DATA_FORMATS:
                found[rel] = scan.files[rel]
    return tuple(found[k] for k in sorted(found))


_layouts: dict[str, tuple[str, list[Split]]] = {}  # folder -> (revision, splits): one entry per repo


def splits(scan: RepoScan) -> list[Split]:
    """Every (config, split) with its files, in card order; splits matching no file are left out.
    Cached per folder at its current revision: globbing is the slow part of a viewer call."""
    cached = _layouts.get(str(scan.root))
    if cached is None or cached[0] != scan.sha:
        cached = _layouts[str(scan.root)] = (scan.sha, _find_splits(scan))
    return cached[1]


def _find_splits(scan: RepoScan) -> list[Split]:
    from datasets.data_files import get_data_patterns, sanitize_patterns

    configs = scan.card_data.get("configs")
    if isinstance(configs, list) and configs:
        layout = [(str(c.get("config_name", "default")), sanitize_patterns(c.get("data_files", [])))
                  for c in configs if isinstance(c, dict)]
    else:
        try:
            layout = [("default", get_data_patterns(str(scan.root)))]
        except FileNotFoundError:  # datasets' EmptyDatasetError: no data files at all
            return []
    out = []
    for config, patterns in layout:
        for split, split_patterns in patterns.items():
            files = _resolve(scan, list(split_patterns))
            if files:
                out.append(Split(config, str(split), files))
    return out


def read_split(scan: RepoScan, split: Split) -> pa.Table:
    return _read_files(scan.sha, tuple(str(f.abspath) for f in split.files))


@lru_cache(maxsize=64)
def _read_files(sha: str, paths: tuple[str, ...]) -> pa.Table:
    """Cached per revision: `sha` is in the key so an edited repo is read again."""
    tables = [_read_file(Path(p)) for p in paths]
    try:
        return pa.concat_tables(tables, promote_options="default")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise DataReadError(f"files of one split have different columns: {exc}") from exc


def _read_file(path: Path) -> pa.Table:
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    try:
        suffix = path.suffix
        if suffix == ".parquet":
            return pq.read_table(path)
        if suffix in (".csv", ".tsv"):
            return pcsv.read_csv(path, parse_options=pcsv.ParseOptions(delimiter="\t" if suffix == ".tsv" else ","))
        if suffix in (".json", ".jsonl"):
            return _read_json(path)
        if suffix == ".txt":
            return pa.table({"text": path.read_text(encoding="utf-8").splitlines()})
        if suffix == ".arrow":
            with pa.ipc.open_stream(path) as reader:
                return reader.read_all()
    except (pa.ArrowException, ValueError, OSError) as exc:  # json.JSONDecodeError is a ValueError
        raise DataReadError(f"{path.name}: {exc}") from exc
    raise DataReadError(f"{path.name}: unsupported data file type {path.suffix}")


def _read_json(path: Path) -> pa.Table:
    """pyarrow's fast reader first; on failure `datasets`' own JSON builder, which encodes mixed-type
    fields as JSON strings, so the viewer shows what load_dataset returns (and fails where it fails)."""
    import pyarrow.json as pjson

    with path.open("rb") as fh:
        head = fh.read(64).lstrip()
    try:
        if head.startswith(b"["):  # a JSON array file (raw ShareGPT style)
            return pa.Table.from_pylist(json.loads(path.read_bytes()))
        return pjson.read_json(path, read_options=pjson.ReadOptions(block_size=1 << 24))
    except (pa.ArrowException, ValueError) as fast_error:
        import datasets

        try:
            with tempfile.TemporaryDirectory(prefix="localhub-json-") as cache:
                return datasets.Dataset.from_json(str(path), cache_dir=cache, keep_in_memory=True).data.table
        except Exception:  # datasets raises its own wrapper types; the first error says more
            raise fast_error from None
