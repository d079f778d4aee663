"""Default recipes by target size: the row by parameter count, the user's settings win, epochs reach the floor."""

from __future__ import annotations

import json
import struct

import pytest

from catalog.errors import DraftsetError
from pipeline.train.recipes import RECIPES, recipe_for, resolve, target_parameters


def test_the_row_is_chosen_by_the_target_s_size():
    assert recipe_for(135_000_000).name == "small" and recipe_for(135_000_000).lr == 1e-3
    assert recipe_for(8_000_000_000).name == "large" and recipe_for(8_000_000_000).ttt_steps == 7
    assert recipe_for(7 * 10**9).name == "large" and recipe_for(7 * 10**9 - 1).name == "small"
    assert [r.min_params for r in RECIPES] == sorted(r.min_params for r in RECIPES)


def test_a_user_setting_wins_and_the_rest_come_from_the_row():
    values, recipe = resolve({"lr": 5e-4, "ttt_steps": 3}, 135_000_000, lambda batch_tokens: 728)
    assert recipe.name == "small"
    assert values["lr"] == 5e-4 and values["ttt_steps"] == 3  # given: kept
    assert values["batch_tokens"] == 8192 and values["fc_norm"] and values["norm_output"]
    assert values["warmup_steps"] == 200 and values["schedule"] == "constant"
    assert values["epochs"] == 6  # ceil(4,000 / 728): 27K rows at 8,192 tokens, issue 29's 4,368 steps


def test_epochs_follow_the_batch_size_given_and_an_epoch_count_given_wins():
    counted = []

    def per_epoch(batch_tokens):
        counted.append(batch_tokens)
        return 100

    values, _ = resolve({"batch_tokens": 32768}, 135_000_000, per_epoch)
    assert counted == [32768] and values["epochs"] == 40
    assert resolve({"epochs": 2}, 135_000_000, per_epoch)[0]["epochs"] == 2
    assert resolve({}, 135_000_000, lambda b: 10**6)[0]["epochs"] == 1


def test_the_target_is_sized_from_its_safetensors_headers(tmp_path):
    header = {"a": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 48]}, "__metadata__": {"format": "pt"}}
    for name, extra in (("model-1.safetensors", {}), ("model-2.safetensors", {"b": [5]})):
        h = {**header, **{k: {"dtype": "F32", "shape": s, "data_offsets": [0, 0]} for k, s in extra.items()}}
        raw = json.dumps(h).encode()
        (tmp_path / name).write_bytes(struct.pack("<Q", len(raw)) + raw)
    assert target_parameters(tmp_path) == 12 + 12 + 5
    with pytest.raises(DraftsetError, match="cannot size the target"):
        target_parameters(tmp_path / "none")
