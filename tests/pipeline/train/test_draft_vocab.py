"""`train`'s draft_vocab_size: a vocabulary lever without a second build (re-picked from the build's counts)."""

import json

import numpy as np
import pytest
from safetensors.torch import load_file

from catalog.errors import DraftsetError
from pipeline.build.vocab import draft_vocab
from pipeline.train.loop import repicked, run_train
from tests.kits.draft_toy import plain_config


def test_a_smaller_draft_vocabulary_is_the_top_k_of_the_builds_counts_and_is_exported(toy, tmp_path):
    built = load_file(str(toy.capture / "vocab.safetensors"))
    k = int(built["d2t"].numel()) // 2
    run_train(
        plain_config(
            capture_dir=toy.capture,
            out_dir=tmp_path / "d",
            batch_tokens=512,
            ttt_steps=2,
            max_steps=2,
            device="cpu",
            draft_vocab_size=k,
        )  # fmt: skip
    )
    config = json.loads((tmp_path / "d" / "config.json").read_text())
    assert config["draft_vocab_size"] == k
    weights = load_file(str(tmp_path / "d" / "model.safetensors"))
    want_d2t, want_t2d = draft_vocab(built["token_counts"].numpy(), k)
    assert np.array_equal(weights["d2t"].numpy(), want_d2t)  # the K most frequent of the build's counts
    assert weights["lm_head.weight"].shape[0] == k and int(want_t2d.sum()) == k


def test_the_builds_size_is_kept_as_is_and_a_build_without_counts_is_a_clear_error():
    import torch

    vocab = {"d2t": torch.zeros(4, dtype=torch.long), "t2d": torch.zeros(10, dtype=torch.bool)}
    assert repicked(vocab, None) is vocab and repicked(vocab, 4) is vocab
    with pytest.raises(DraftsetError, match="no token_counts"):
        repicked(vocab, 2)
    counts = {**vocab, "token_counts": torch.tensor([5, 0, 9, 1, 0, 0, 7, 0, 0, 2])}
    again = repicked(counts, 3)
    assert again["t2d"].nonzero().flatten().tolist() == [0, 2, 6]
    with pytest.raises(DraftsetError, match="between 1 and"):
        repicked(counts, 11)
