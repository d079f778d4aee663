"""Per-record review state, kept by the service: which sampled records of an adapter a reviewer has marked
reviewed, the "reviewed N of M · flagged F" line, the review queue (the next record nobody has reviewed or
flagged) and text search over the sampled records, as Argilla and Label Studio give a reviewer.

A mark binds to the spec hash it judged, as a flag does (adapters/review/flags.py): marking under a spec that changed
since the page was loaded is refused, and a new spec starts a fresh count (older marks stay in the table). The
state is the team's: one reviewer's mark counts for everyone, with who made it. M is the page's sample (the
rows the page shows), so N of M is about the records in front of the reviewer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from adapters.review import flags, store
from catalog.db import Catalog
from catalog.errors import DraftsetError

TABLE = "record_reviews"


def _marks(catalog: Catalog, repo_id: str, spec_hash: str) -> dict[int, dict[str, Any]]:
    rows = catalog.query(
        f"SELECT row_index, record_id, reviewed_by, reviewed_at FROM {TABLE} WHERE repo_id = ? AND spec_hash = ?",
        [repo_id, spec_hash],
    )
    return {int(r["row_index"]): r for r in rows}


def mark(
    catalog: Catalog,
    repo_id: str,
    spec_hash: str,
    row_index: int,
    reviewer: str,
    *,
    reviewed: bool = True,
    record_id: str | None = None,
) -> None:
    """Mark one record reviewed (or take the mark back) under the spec the reviewer looked at."""
    record = store.require(catalog, repo_id)
    if spec_hash != record.spec_hash:
        raise DraftsetError(
            f"{repo_id}'s spec changed since the page was loaded ({spec_hash[:12]} → {record.spec_hash[:12]})",
            hint="reload the page and look at the record again under the current spec",
        )
    if row_index < 0:
        raise DraftsetError(f"row must be ≥ 0, got {row_index}", hint="rows are numbered from 0 in file order")
    if reviewed:
        catalog.upsert(
            TABLE,
            [
                {
                    "repo_id": repo_id,
                    "spec_hash": spec_hash,
                    "row_index": row_index,
                    "record_id": record_id,
                    "reviewed_by": reviewer,
                    "reviewed_at": datetime.now(),
                }
            ],
        )
        return
    with catalog.writer() as con:
        con.execute(
            f"DELETE FROM {TABLE} WHERE repo_id = ? AND spec_hash = ? AND row_index = ?",
            [repo_id, spec_hash, row_index],
        )


def state(catalog: Catalog, repo_id: str, sample: Iterable[int], after: int | None = None) -> dict[str, Any]:
    """The review state of the sampled rows `sample` (in the page's order) under the current spec, and the
    queue's next row: the first after `after` (wrapping round) that is neither reviewed nor flagged open."""
    record = store.require(catalog, repo_id)
    rows = list(dict.fromkeys(int(r) for r in sample))
    marks = _marks(catalog, repo_id, record.spec_hash)
    flagged = {f.row_index for f in flags.open_on(flags.load(catalog, repo_id), record.spec_hash)}
    reviewed = [r for r in rows if r in marks]
    todo = [r for r in rows if r not in marks and r not in flagged]
    start = rows.index(after) + 1 if after in rows else 0
    queue = [r for r in rows[start:] + rows[:start] if r in todo]
    return {
        "repo_id": repo_id,
        "spec_hash": record.spec_hash,
        "total": len(rows),
        "reviewed": reviewed,
        "flagged": [r for r in rows if r in flagged],
        "reviewed_by": {str(r): marks[r]["reviewed_by"] for r in reviewed},
        "next_unreviewed": queue[0] if queue else None,
        "line": line(len(reviewed), len(rows), len([r for r in rows if r in flagged])),
    }


def line(reviewed: int, total: int, flagged: int) -> str:
    return f"reviewed {reviewed} of {total} · flagged {flagged}"


def matches(preview: dict[str, Any], query: str) -> bool:
    """Whether a sampled record holds `query` (case-insensitive) in its raw row or its canonical records: the
    text a reviewer reads, searched as text (no pattern syntax: the query is never interpreted)."""
    needle = query.casefold().strip()
    if not needle:
        return True
    seen = json.dumps([preview.get("raw"), preview.get("canonical")], ensure_ascii=False, default=str)
    return needle in seen.casefold()
