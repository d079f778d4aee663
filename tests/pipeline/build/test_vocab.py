"""Draft vocabulary invariants: d + d2t[d] is the right target id, t2d marks exactly K ids."""

from __future__ import annotations

import numpy as np
import pytest

from catalog.errors import DraftsetError
from pipeline.build.vocab import coverage, draft_vocab


def test_top_k_ids_sorted_with_offsets():
    counts = np.array([5, 0, 9, 9, 1, 7, 0, 3], dtype=np.int64)
    d2t, t2d = draft_vocab(counts, 4)
    # Top 4 by count: ids 2 and 3 (9), 5 (7), 0 (5); sorted by id.
    assert (np.arange(4) + d2t).tolist() == [0, 2, 3, 5]
    assert d2t.dtype == np.int64 and d2t.tolist() == [0, 1, 1, 2]
    assert t2d.dtype == bool and t2d.tolist() == [True, False, True, True, False, True, False, False]
    assert coverage(counts, t2d) == pytest.approx(30 / 34)


def test_ties_prefer_lower_ids_and_zero_counts_fill_up():
    counts = np.array([0, 2, 2, 2, 0], dtype=np.int64)
    d2t, t2d = draft_vocab(counts, 4)
    assert (np.arange(4) + d2t).tolist() == [0, 1, 2, 3]
    assert t2d.sum() == 4


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_invariants_on_random_counts(seed):
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 50, size=1000)
    k = 137
    d2t, t2d = draft_vocab(counts, k)
    targets = np.arange(k) + d2t
    assert t2d.sum() == k and t2d[targets].all()
    assert np.all(np.diff(targets) > 0) and np.all(np.diff(d2t) >= 0)
    assert counts[targets].min() >= counts[~t2d].max()  # nothing outside is more frequent than inside


def test_k_larger_than_vocab_is_refused():
    with pytest.raises(DraftsetError, match="draft vocabulary size"):
        draft_vocab(np.ones(10, dtype=np.int64), 11)
