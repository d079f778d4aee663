"""A repo's configs → splits → data files, and reading one split into an Arrow table (for the viewer).

Reading happens in an isolated worker process (`summarize`, called through isolated.py): the parent
server never hands untrusted bytes to libarrow.

Split layout uses `datasets`' own pattern logic (card `configs:` via sanitize_patterns, otherwise the
file-name conventions of get_data_patterns) so the viewer shows exactly the splits `load_dataset` finds.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from catalog import limits
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
            try:  # a card's `configs:` pattern such as ../../** must not reach outside the repo
                rel = Path(match).resolve().relative_to(scan.root.resolve()).as_posix()
            except ValueError:
                continue
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
        layout = [
            (str(c.get("config_name", "default")), sanitize_patterns(c.get("data_files", [])))
            for c in configs
            if isinstance(c, dict)
        ]
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


def summarize(paths: tuple[str, ...], first_rows: int) -> dict[str, Any]:
    """What the viewer needs from a split's files: runs in an isolated worker (isolated.py), never raises.

    {"num_rows", "nbytes", "num_columns", "features", "rows", "rows_truncated"} or {"error": one line}."""
    try:
        table = _read_files(paths)
        rows, size, cut = [], 0, False
        for row in table.slice(0, first_rows).to_pylist():
            cells = {k: _json_cell(v) for k, v in row.items()}
            entry = {
                "row": {k: v for k, (v, _) in cells.items()},
                "truncated_cells": [k for k, (_, t) in cells.items() if t],
            }
            size += len(json.dumps(entry, default=str, ensure_ascii=False).encode("utf-8", "replace"))
            if size > limits.MAX_RESPONSE_ROWS_BYTES:  # bound the answer, as the real viewer does
                cut = True
                break
            rows.append(entry)
        from datasets import Features

        return {
            "num_rows": table.num_rows,
            "nbytes": table.nbytes,
            "num_columns": table.num_columns,
            "features": Features.from_arrow_schema(table.schema).to_dict(),
            "rows": rows,
            "rows_truncated": cut,
        }
    except DataReadError as exc:
        return {"error": str(exc)}
    except MemoryError:
        return {"error": f"reading needs more than the {limits.MAX_WORKER_MEMORY // 2**20:,} MiB memory limit"}
    except Exception as exc:  # noqa: BLE001 - untrusted bytes: any library error is this request's answer
        return {"error": f"{type(exc).__name__}: {str(exc).strip()[:300]}"}


def _json_cell(value: Any) -> tuple[Any, bool]:
    """(JSON-safe value, truncated?). Binary cells (images, audio) are not inlined, as in the viewer."""
    if isinstance(value, (bytes, bytearray)):
        return None, True
    if isinstance(value, dict):
        named = {k: _json_cell(v) for k, v in value.items()}
        return {k: v for k, (v, _) in named.items()}, any(t for _, t in named.values())
    if isinstance(value, list):
        items = [_json_cell(v) for v in value]
        return [v for v, _ in items], any(t for _, t in items)
    return value, False


def _read_files(paths: tuple[str, ...]) -> pa.Table:
    tables = [_read_file(Path(p)) for p in paths]
    try:
        return pa.concat_tables(tables, promote_options="default")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise DataReadError(f"files of one split have different columns: {exc}") from exc


def _check_json_depth(path: Path) -> None:
    """Refuse JSON nested past the limit before pyarrow sees it (libarrow segfaults on ~50,000 deep)."""
    with path.open("rb") as fh:
        for lineno, line in enumerate(fh, 1):
            if line.count(b"[") + line.count(b"{") <= limits.MAX_JSON_DEPTH:
                continue
            depth = limits.json_depth(line.decode("utf-8", "replace"))
            if depth > limits.MAX_JSON_DEPTH + 1:  # +1: the array around a JSON-array file's rows
                raise DataReadError(f"{path.name}:{lineno}: JSON nested {depth:,} deep (limit {limits.MAX_JSON_DEPTH})")


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

    _check_json_depth(path)
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
