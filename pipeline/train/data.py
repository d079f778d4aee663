"""Training data from a capture: a stable held-out split by id and token-budget batches."""

from __future__ import annotations

import random
from typing import Protocol

from catalog.io import stable_bucket
from pipeline.capture.runtime import length_batches


class _HasIds(Protocol):
    def ids(self) -> list[str]: ...


def is_heldout(sample_id: str, every: int) -> bool:
    """1 in `every` ids is held out, decided by the id's hash: stable across runs, resumes and ranks."""
    return every > 0 and stable_bucket(sample_id, every) == 0


def split_ids(reader: _HasIds, heldout_every: int) -> tuple[list[str], list[str]]:
    """(train ids, held-out ids); when every id hashes to held-out (tiny captures) all train and none is
    held out, so no accuracy is ever reported as held-out on samples the draft trained on."""
    ids = reader.ids()
    held = [i for i in ids if is_heldout(i, heldout_every)]
    train = [i for i in ids if not is_heldout(i, heldout_every)]
    return (train, held) if train else (held, [])


def token_batches(lengths: dict[str, int], batch_tokens: int, seed: int, epoch: int) -> list[list[str]]:
    """Length-sorted batches under a padded-token budget, in a seeded random order per epoch."""
    batches = length_batches(sorted(lengths), lengths.__getitem__, batch_tokens)  # ids sorted: ties are stable
    random.Random(seed * 1000 + epoch).shuffle(batches)
    return batches
