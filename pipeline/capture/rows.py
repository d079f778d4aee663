"""Read and validate built rows (`data/build/<NAME>/rows-*.parquet` + manifest.json) for capture."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from catalog.errors import DraftsetError


@dataclass
class BuiltRow:
    id: str
    row_index: int
    input_ids: list[int]
    loss_mask: list[int]
    problem: str | None = None  # drop reason, when the row cannot be captured
    field: str | None = None


def _check(row: BuiltRow, vocab_size: int) -> BuiltRow:
    if not isinstance(row.id, str) or not row.id:
        row.problem, row.field = "bad_id", "id"
    elif not row.input_ids:
        row.problem, row.field = "empty", "input_ids"
    elif row.loss_mask is None or len(row.loss_mask) != len(row.input_ids):
        row.problem, row.field = "mask_length_mismatch", "loss_mask"
    elif any(t is None or not 0 <= t < vocab_size for t in row.input_ids):
        row.problem, row.field = "token_out_of_vocab", "input_ids"
    elif any(m not in (0, 1) for m in row.loss_mask):
        row.problem, row.field = "bad_mask_value", "loss_mask"
    elif not any(row.loss_mask):
        row.problem, row.field = "no_trainable_tokens", "loss_mask"
    return row


def read_build_rows(build_dir: Path, vocab_size: int) -> tuple[dict, list[BuiltRow]]:
    """(build manifest, rows in file order). Bad rows come back flagged, never silently skipped."""
    import pyarrow.parquet as pq

    build_dir = Path(build_dir)
    files = sorted(build_dir.glob("rows-*.parquet"))
    if not files:
        raise DraftsetError(f"no rows-*.parquet in {build_dir}", hint="run `draftset build` first")
    manifest_path = build_dir / "manifest.json"
    try:  # the serving facts (template, system prompt, thinking, length) travel on from here: never guess them
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError) as exc:
        raise DraftsetError(
            f"build {build_dir} has no readable manifest.json: {exc}".splitlines()[0],
            hint="re-run `draftset build`; it writes manifest.json last",
        ) from exc
    rows: list[BuiltRow] = []
    for f in files:
        try:
            table = pq.read_table(f, columns=["id", "input_ids", "loss_mask"])
        except (OSError, ValueError, KeyError) as exc:  # pyarrow's errors derive from these
            raise DraftsetError(
                f"build shard {f} is unreadable or lacks id/input_ids/loss_mask: {str(exc).splitlines()[0]}",
                hint="re-run `draftset build` for this mix",
            ) from exc
        for rec in table.to_pylist():
            rows.append(_check(BuiltRow(rec["id"], len(rows), rec["input_ids"] or [], rec["loss_mask"]), vocab_size))
    dupes = sorted((i for i, n in Counter(r.id for r in rows).items() if n > 1), key=str)[:5]
    if dupes:
        raise DraftsetError(f"build {build_dir} has duplicate row ids {dupes}", hint="re-run `draftset build`")
    return manifest, rows
