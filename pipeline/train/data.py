"""Training data from a capture: a stable held-out split by id and token-budget batches."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

from pipeline.capture.store import CaptureReader


def is_heldout(sample_id: str, every: int) -> bool:
    """1 in `every` ids is held out, decided by the id's hash: stable across runs, resumes and ranks."""
    return every > 0 and int(hashlib.sha1(sample_id.encode()).hexdigest()[:8], 16) % every == 0


def split_ids(reader: CaptureReader, heldout_every: int) -> tuple[list[str], list[str]]:
    ids = reader.ids()
    held = [i for i in ids if is_heldout(i, heldout_every)]
    train = [i for i in ids if not is_heldout(i, heldout_every)]
    return (train or held), held


def token_batches(lengths: dict[str, int], batch_tokens: int, seed: int, epoch: int) -> list[list[str]]:
    """Length-sorted batches under a padded-token budget, in a seeded random order per epoch."""
    batches, current = [], []
    for sample_id in sorted(lengths, key=lambda i: (lengths[i], i)):
        if current and lengths[sample_id] * (len(current) + 1) > batch_tokens:
            batches.append(current)
            current = []
        current.append(sample_id)
    batches += [current] if current else []
    random.Random(seed * 1000 + epoch).shuffle(batches)
    return batches


def lengths_of(reader: CaptureReader, ids: list[str]) -> dict[str, int]:
    from safetensors import safe_open

    out: dict[str, int] = {}
    by_shard: dict[Path, list[str]] = {}
    for i in ids:
        by_shard.setdefault(reader.where[i], []).append(i)
    for shard, members in by_shard.items():
        with safe_open(str(shard), framework="pt") as f:
            for i in members:
                out[i] = f.get_slice(f"{i}.input_ids").get_shape()[0]
    return out
