"""The samples a draft is judged on: a capture's (taps stored) or a build's (a draft trained online).

Either way the split is the one training used (pipeline/train/data.split_ids, by id hash), so "held-out"
means the same rows in `check draft`, `check accept-length` and training's own held-out accuracy.
"""

from __future__ import annotations

from pathlib import Path

import torch

from pipeline.capture.store import CaptureReader
from pipeline.stage import require
from pipeline.train.data import split_ids


class Samples:
    """ids() and load(id) -> {input_ids, loss_mask[, aux, last]} over a capture dir or a build dir."""

    def __init__(self, path: Path, vocab_size: int | None = None):
        self.path = Path(path)
        self.has_states = not any(self.path.glob("rows-*.parquet"))  # a build has rows; a capture has shards
        self._reader: CaptureReader | None = None
        self._rows: dict[str, tuple[list[int], list[int]]] = {}
        if self.has_states:
            self._reader = CaptureReader(self.path)
        else:
            from pipeline.capture.rows import read_build_rows

            _, rows = read_build_rows(self.path, vocab_size=vocab_size or 1 << 62)
            self._rows = {r.id: (r.input_ids, r.loss_mask) for r in rows if not r.problem}
        require(
            bool(self.ids()),
            f"no samples in {self.path}",
            hint="pass --captures the draft's capture dir, or its build dir for a draft trained online",
        )

    def ids(self) -> list[str]:
        return self._reader.ids() if self._reader is not None else sorted(self._rows)

    def load(self, sample_id: str, with_states: bool = True) -> dict[str, torch.Tensor]:
        if self._reader is not None:
            return self._reader.load(sample_id) if with_states else self._reader.load(sample_id, fields=FIELDS)
        ids, mask = self._rows[sample_id]
        return {"input_ids": torch.tensor(ids, dtype=torch.int32), "loss_mask": torch.tensor(mask, dtype=torch.int8)}

    def split(self, heldout_every: int) -> tuple[list[str], list[str]]:
        return split_ids(self, heldout_every)


FIELDS = ("input_ids", "loss_mask")


def first_trainable(loss_mask: torch.Tensor) -> int:
    """Index of the first trainable token (the generation boundary); 0 when there is none."""
    hits = loss_mask.nonzero()
    return int(hits[0]) if len(hits) else 0
