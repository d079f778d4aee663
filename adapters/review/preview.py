"""One raw row and what a spec makes of it: `draftset adapters preview` on this machine and through the service.

One home for both paths, so the row read (file order, as ingest counts), the "no such row" error and the
verdict on the row (canonical records, rejected by a named field, or malformed) are the same wherever the
command runs.
"""

from __future__ import annotations

from typing import Any

from adapters.map.apply import RowMapper
from adapters.read.source import RawRow, iter_raw_rows
from adapters.row_fields import RowError
from adapters.spec import AdapterSpec
from catalog.errors import DraftsetError, NotFound


def read_row(spec: AdapterSpec, row: int, *, endpoint: str, token: str | None) -> RawRow:
    """Row `row` of the spec's pinned source (rows are numbered from 0 in file order)."""
    if row < 0:
        raise DraftsetError(f"--row must be ≥ 0, got {row}", hint="rows are numbered from 0 in file order")
    found = None
    for raw in iter_raw_rows(spec, endpoint=endpoint, token=token, limit=row + 1):
        found = raw
    if found is None or found.row_index != row:
        size = 0 if found is None else found.row_index + 1
        raise NotFound(
            f"{spec.source.repo_id} has no row {row} (it has {size})",
            hint=f"pick a row below {size}" if size else "the source has no rows: check its data files",
        )
    return found


def canonical_of(spec: AdapterSpec, raw: RawRow) -> list[dict[str, Any]] | dict[str, Any]:
    """The row's canonical records as JSON, or {"rejected": {field, reason}}, or {"malformed": error}."""
    if raw.error is not None:
        return {"malformed": raw.error}
    try:
        return [r.model_dump(mode="json") for r in RowMapper(spec).apply(raw.row_index, raw.row)]
    except RowError as exc:
        return {"rejected": {"field": exc.field, "reason": exc.reason}}
