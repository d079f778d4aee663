"""The draft vocabulary: top-K most frequent loss-masked target tokens, as `d2t` offsets and a `t2d` mask.

`d2t[d]` is an offset: draft id d stands for target id `d + d2t[d]` (the SGLang/speculators format);
`t2d[t]` says whether target id t is in the draft vocabulary. Ids are kept sorted, so d2t is non-decreasing.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from catalog.errors import DraftsetError
from catalog.io import atomic_path


def token_counts(shards: Iterable[Path], vocab_size: int) -> np.ndarray:
    """Frequency of every target token id over the loss-masked positions of the build shards."""
    counts = np.zeros(vocab_size, dtype=np.int64)
    for path in shards:
        for batch in pq.ParquetFile(path).iter_batches(columns=["input_ids", "loss_mask"]):
            ids = batch.column("input_ids").flatten().to_numpy()
            mask = batch.column("loss_mask").flatten().to_numpy().astype(bool)
            trained = ids[mask]
            if trained.size and (trained.max() >= vocab_size or trained.min() < 0):
                raise DraftsetError(
                    f"{path.name}: token id {int(trained.max())} is outside the target vocabulary of {vocab_size}",
                    hint="rebuild with the same --model the rows came from",
                )
            counts += np.bincount(trained, minlength=vocab_size)
    return counts


def draft_vocab(counts: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(d2t int64[K], t2d bool[V]) for the K most frequent ids (ties: lower id first), sorted by id."""
    vocab_size = counts.shape[0]
    if not 0 < k <= vocab_size:
        raise DraftsetError(
            f"draft vocabulary size {k} must be between 1 and the target's {vocab_size}",
            hint="lower --draft-vocab-size",
        )
    top = np.sort(np.argsort(-counts, kind="stable")[:k]).astype(np.int64)
    d2t = top - np.arange(k, dtype=np.int64)
    t2d = np.zeros(vocab_size, dtype=bool)
    t2d[top] = True
    return d2t, t2d


def save_vocab(path: Path, d2t: np.ndarray, t2d: np.ndarray, counts: np.ndarray) -> None:
    from safetensors.numpy import save_file

    try:
        with atomic_path(path) as tmp:
            save_file({"d2t": d2t, "t2d": t2d, "token_counts": counts}, str(tmp))
    except OSError as exc:
        raise DraftsetError(
            f"cannot write {path}: {exc}", hint="free disk space or fix permissions, then re-run build (rows are kept)"
        ) from exc


def coverage(counts: np.ndarray, t2d: np.ndarray) -> float:
    """Share of trainable tokens the draft vocabulary can predict at all."""
    total = int(counts.sum())
    return float(counts[t2d].sum() / total) if total else 0.0
