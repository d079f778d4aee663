"""Dataset-viewer style endpoints under /viewer (is-valid, splits, first-rows, info, size).

The real huggingface_hub refuses viewer calls on a non-default endpoint, so the project's own code calls
these through its configured viewer base URL. Shapes follow huggingface/dataset-viewer's docs. A data
file that cannot be read gives the viewer's 500 `{"error": ...}` for that dataset only; downloads of the
same file keep working. Files are read in isolated worker processes (isolated.py) under memory and time
limits: a hostile file (a 50,000-deep JSON row that segfaults libarrow) fails its request, never the server.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pipeline.servers.localhub.api import HubError, HubJSON, authorized
from pipeline.servers.localhub.isolated import READER, ReadFailed
from pipeline.servers.localhub.repo import DATA_FORMATS, RepoScan
from pipeline.servers.localhub.splits import Split, splits

FIRST_ROWS = 100
NOT_FOUND = (
    "The dataset does not exist, or is not accessible without authentication (private or gated). "
    "Please check the spelling of the dataset name or retry with authentication."
)


def _dataset(request: Request) -> RepoScan:
    name = request.query_params.get("dataset")
    if not name:
        raise HubError(422, "MissingRequiredParameter", "Parameter 'dataset' is required")
    scan = request.app.state.store.get(name)
    if scan is None:
        raise HubError(404, "ResponseNotFound", NOT_FOUND)
    return scan


def _selected(request: Request, scan: RepoScan, need_split: bool = False) -> list[Split]:
    config, split = request.query_params.get("config"), request.query_params.get("split")
    if need_split and not (config and split):
        raise HubError(422, "MissingRequiredParameter", "Parameters 'config' and 'split' are required")
    chosen = [s for s in splits(scan) if (not config or s.config == config) and (not split or s.split == split)]
    if not chosen:
        what = f"config {config!r}" + (f" split {split!r}" if split else "") if config else "any data file"
        raise HubError(404, "ResponseNotFound", f"Not found: {scan.repo_id} has no {what}.")
    return chosen


def _read(scan: RepoScan, split: Split) -> dict[str, Any]:
    """The split's summary from an isolated worker; raises ReadFailed (bad data, crash, memory, time)."""
    return READER.summary(scan.sha, tuple(str(f.abspath) for f in split.files), FIRST_ROWS)


def _table(scan: RepoScan, split: Split) -> dict[str, Any]:
    try:
        return _read(scan, split)
    except ReadFailed as exc:
        raise HubError(
            500,
            "DatasetGenerationError",
            f"Cannot read {scan.repo_id} config {split.config!r} split {split.split!r}: {exc}",
        ) from exc


def is_valid(request: Request) -> Response:
    scan = _dataset(request)
    readable = []
    for split in splits(scan):
        try:
            _read(scan, split)
            readable.append(True)
        except ReadFailed:
            readable.append(False)
    ok = bool(readable) and all(readable)
    # /search, /filter and /statistics are not served here, so they are honestly reported unavailable.
    return HubJSON({"preview": any(readable), "viewer": ok, "search": False, "filter": False, "statistics": False})


def list_splits(request: Request) -> Response:
    scan = _dataset(request)
    found = _selected(request, scan)
    return HubJSON(
        {
            "splits": [{"dataset": scan.repo_id, "config": s.config, "split": s.split} for s in found],
            "pending": [],
            "failed": [],
        }
    )


def first_rows(request: Request) -> Response:
    scan = _dataset(request)
    split = _selected(request, scan, need_split=True)[0]
    if scan.gated and not authorized(request):
        raise HubError(
            401,
            "ExternalUnauthenticatedError",
            f"{scan.repo_id} is gated: send any bearer token (Authorization header) to read rows.",
        )
    table = _table(scan, split)
    rows = [{"row_idx": idx, **entry} for idx, entry in enumerate(table["rows"])]
    features = [
        {"feature_idx": i, "name": name, "type": ftype} for i, (name, ftype) in enumerate(table["features"].items())
    ]
    return HubJSON(
        {
            "dataset": scan.repo_id,
            "config": split.config,
            "split": split.split,
            "features": features,
            "rows": rows,
            "truncated": table["num_rows"] > len(rows) or table["rows_truncated"],
        }
    )


def _sizes(scan: RepoScan, chosen: list[Split]) -> tuple[list[tuple[Split, dict[str, Any]]], list[dict[str, str]]]:
    read, failed = [], []
    for split in chosen:
        try:
            read.append((split, _read(scan, split)))
        except ReadFailed as exc:
            failed.append({"dataset": scan.repo_id, "config": split.config, "split": split.split, "error": str(exc)})
    return read, failed


def _config_info(scan: RepoScan, config: str, read: list[tuple[Split, dict[str, Any]]]) -> dict[str, Any]:
    mine = [(s, t) for s, t in read if s.config == config]
    files = sum(f.size for s, _ in mine for f in s.files)
    memory = sum(t["nbytes"] for _, t in mine)
    return {
        "description": scan.description,
        "citation": "",
        "homepage": "",
        "license": str(scan.card_data.get("license", "")),
        "features": mine[0][1]["features"],
        "builder_name": DATA_FORMATS[mine[0][0].files[0].abspath.suffix],
        "dataset_name": scan.repo_id,
        "config_name": config,
        "version": {"version_str": "0.0.0", "major": 0, "minor": 0, "patch": 0},
        "splits": {
            s.split: {
                "name": s.split,
                "num_bytes": t["nbytes"],
                "num_examples": t["num_rows"],
                "dataset_name": scan.repo_id,
            }
            for s, t in mine
        },
        "download_size": files,
        "dataset_size": memory,
        "size_in_bytes": files + memory,
    }


def info(request: Request) -> Response:
    scan = _dataset(request)
    chosen = _selected(request, scan)
    read, failed = _sizes(scan, chosen)
    if request.query_params.get("config"):
        if failed:
            raise HubError(500, "DatasetGenerationError", failed[0]["error"])
        return HubJSON({"dataset_info": _config_info(scan, chosen[0].config, read), "partial": False})
    configs = list(dict.fromkeys(s.config for s, _ in read))
    return HubJSON(
        {
            "dataset_info": {c: _config_info(scan, c, read) for c in configs},
            "pending": [],
            "failed": failed,
            "partial": False,
        }
    )


def size(request: Request) -> Response:
    scan = _dataset(request)
    read, failed = _sizes(scan, _selected(request, scan))
    # Files are served as-is (no parquet conversion), so "parquet bytes" are the original file bytes.
    split_rows = [
        {
            "dataset": scan.repo_id,
            "config": s.config,
            "split": s.split,
            "num_bytes_parquet_files": sum(f.size for f in s.files),
            "num_bytes_memory": t["nbytes"],
            "num_rows": t["num_rows"],
            "num_columns": t["num_columns"],
        }
        for s, t in read
    ]
    configs = []
    for config in dict.fromkeys(s["config"] for s in split_rows):
        mine = [s for s in split_rows if s["config"] == config]
        configs.append(
            {
                "dataset": scan.repo_id,
                "config": config,
                "num_bytes_original_files": sum(s["num_bytes_parquet_files"] for s in mine),
                "num_bytes_parquet_files": sum(s["num_bytes_parquet_files"] for s in mine),
                "num_bytes_memory": sum(s["num_bytes_memory"] for s in mine),
                "num_rows": sum(s["num_rows"] for s in mine),
                "num_columns": mine[0]["num_columns"],
            }
        )
    total = {
        k: sum(c[k] for c in configs)
        for k in ("num_bytes_original_files", "num_bytes_parquet_files", "num_bytes_memory", "num_rows")
    }
    return HubJSON(
        {
            "size": {"dataset": {"dataset": scan.repo_id, **total}, "configs": configs, "splits": split_rows},
            "pending": [],
            "failed": failed,
            "partial": bool(failed),
        }
    )


routes = [
    Route("/viewer/is-valid", is_valid),
    Route("/viewer/splits", list_splits),
    Route("/viewer/first-rows", first_rows),
    Route("/viewer/info", info),
    Route("/viewer/size", size),
]
