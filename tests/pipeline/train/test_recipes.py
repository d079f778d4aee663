"""Default recipes by target size: the row by parameter count, the user's settings win, epochs reach the floor."""

from __future__ import annotations

import json
import struct

import pytest

from catalog.errors import DraftsetError
from pipeline.train.recipes import RECIPE_FIELDS, RECIPES, recipe_for, resolve, target_parameters


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
    assert resolve({"warmup_steps": 500}, 135_000_000, lambda b: 5)[0]["warmup_steps"] == 500  # given: kept
    assert resolve({"epochs": 1}, 135_000_000, lambda b: 50)[0]["warmup_steps"] == 5  # a tenth of 50 steps


def test_epochs_follow_the_batch_size_given_and_an_epoch_count_given_wins():
    counted = []

    def per_epoch(batch_tokens):
        counted.append(batch_tokens)
        return 100

    values, _ = resolve({"batch_tokens": 32768}, 135_000_000, lambda b: counted.append(b) or 1000)
    assert counted == [32768] and values["epochs"] == 4
    assert resolve({}, 135_000_000, per_epoch)[0]["epochs"] == 10  # 40 would reach the floor: capped at max_epochs
    assert resolve({"epochs": 2}, 135_000_000, per_epoch)[0]["epochs"] == 2
    assert resolve({}, 135_000_000, lambda b: 10**6)[0]["epochs"] == 1


def test_steps_for_planned_tokens_follow_the_rows_floor_and_batch_size():
    from pipeline.train.recipes import steps_for_tokens

    small = RECIPES[0]
    assert steps_for_tokens(small.batch_tokens * 728) == 6 * 728  # 6 epochs of 728 batches reach 4,000
    assert steps_for_tokens(small.batch_tokens * 10_000) == 10_000  # one epoch is past the floor
    assert steps_for_tokens(0) is None


def test_the_target_is_sized_from_its_safetensors_headers(tmp_path):
    header = {"a": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 48]}, "__metadata__": {"format": "pt"}}
    for name, extra in (("model-1.safetensors", {}), ("model-2.safetensors", {"b": [5]})):
        h = {**header, **{k: {"dtype": "F32", "shape": s, "data_offsets": [0, 0]} for k, s in extra.items()}}
        raw = json.dumps(h).encode()
        (tmp_path / name).write_bytes(struct.pack("<Q", len(raw)) + raw)
    assert target_parameters(tmp_path) == 12 + 12 + 5
    # the same weights again beside the shards (Mistral's consolidated.safetensors): the index says which count
    (tmp_path / "consolidated.safetensors").write_bytes((tmp_path / "model-1.safetensors").read_bytes())
    assert target_parameters(tmp_path) == 12 + 12 + 12 + 5  # no index: every file
    index = {"weight_map": {"a": "model-1.safetensors", "b": "model-2.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    assert target_parameters(tmp_path) == 12 + 12 + 5
    with pytest.raises(DraftsetError, match="cannot size the target"):
        target_parameters(tmp_path / "none")


# -- applied: the train stage fills what the user left out, names the row, and says so when it cannot size ------


def test_the_recipe_settings_are_the_ones_the_entry_points_leave_out():
    from pipeline.stage.config import inherited_fields
    from pipeline.train.config import TrainConfig

    assert set(inherited_fields(TrainConfig)) == set(RECIPE_FIELDS)
    assert set(RECIPE_FIELDS) <= set(TrainConfig.model_fields)
    assert all(hasattr(RECIPES[0], name) for name in RECIPE_FIELDS if name != "epochs")


def _config(tmp_path, **given):
    from pipeline.train.config import TrainConfig

    return TrainConfig(capture_dir=tmp_path / "cap", out_dir=tmp_path / "out", **given)


def test_resolved_config_fills_only_what_was_not_given(tmp_path, monkeypatch):
    from pipeline.train import recipes

    monkeypatch.setattr(recipes, "target_parameters", lambda model_dir: 8_000_000_000)
    config, line = recipes.resolved_config(_config(tmp_path, lr=5e-4, epochs=2), tmp_path, lambda b: 1000)
    assert config.recipe == "large" and config.recipe_source == RECIPES[1].source
    assert config.lr == 5e-4 and config.epochs == 2  # given: kept
    assert config.ttt_steps == 7 and config.fc_norm and config.warmup_steps == 200  # the large row's
    assert config.recipe_filled == [n for n in RECIPE_FIELDS if n not in ("lr", "epochs")]
    assert config.target_parameters == 8_000_000_000 and "recipe large for a 8,000,000,000-parameter target" in line
    again, _ = recipes.resolved_config(config, tmp_path, lambda b: 1)  # resolved once: kept as it is
    assert again == config


def test_every_recipe_setting_given_needs_no_target(tmp_path, monkeypatch):
    from pipeline.train import recipes

    def unsizable(model_dir):
        raise AssertionError("sized although every recipe setting was given")

    monkeypatch.setattr(recipes, "target_parameters", unsizable)
    given = {"epochs": 1, "lr": 1e-4, "batch_tokens": 64, "ttt_steps": 2, "warmup_steps": 0, "schedule": "cosine"}
    config = _config(tmp_path, **given, fc_norm=False, norm_output=False)
    resolved, line = recipes.resolved_config(config, tmp_path, lambda b: 1)
    assert resolved == config and resolved.recipe is None and "every recipe setting was given" in line


def test_a_default_run_trains_the_small_row_and_resolved_json_names_it(toy, tmp_path, capsys):
    import math

    from pipeline.stage import stage_settings
    from pipeline.train.config import TrainConfig
    from pipeline.train.data import token_batches
    from pipeline.train.loop import TrainStage, run_train
    from pipeline.train.recipes import planned_steps

    values = stage_settings(TrainConfig, None, {"max_steps": 1, "device": "cpu"})  # as `draftset train` builds it
    ckpt = run_train(TrainConfig(capture_dir=toy.capture, out_dir=tmp_path / "d", **values))
    train = json.loads((ckpt / "resolved.json").read_text())["train"]
    small = RECIPES[0]
    assert train["recipe"] == "small" and train["recipe_source"] == small.source
    assert train["recipe_filled"] == list(RECIPE_FIELDS) and 0 < train["target_parameters"] < small.min_params + 10**9
    assert (train["lr"], train["batch_tokens"], train["ttt_steps"]) == (small.lr, small.batch_tokens, small.ttt_steps)
    assert (train["schedule"], train["fc_norm"], train["norm_output"]) == ("constant", 1, 1)
    stage = TrainStage(TrainConfig(capture_dir=toy.capture, out_dir=tmp_path / "probe", device="cpu"))
    per_epoch = len(token_batches(stage.lengths, small.batch_tokens, 0, 0))
    assert train["epochs"] == min(math.ceil(small.min_steps / per_epoch), small.max_epochs)  # the floor, capped
    planned, resolved = planned_steps(
        TrainConfig(capture_dir=toy.capture, out_dir=tmp_path / "p"), toy.model, stage.lengths
    )
    assert (
        resolved.epochs == train["epochs"] and planned == train["epochs"] * per_epoch
    )  # what check pilot forecasts at
    out = capsys.readouterr().out
    assert "train: recipe small for a " in out
    assert per_epoch * small.max_epochs < small.min_steps  # the toy build is small: the floor is out of reach
    assert f"(capped at {small.max_epochs} passes: 4,000 steps would take " in out
    assert train["warmup_steps"] == train["epochs"] * per_epoch // 10 < small.warmup_steps  # a tenth of a short run
    assert json.loads((tmp_path / "d" / "train" / "config.json").read_text())["recipe"] == "small"


def test_a_given_setting_wins_over_the_row(toy, tmp_path):
    from pipeline.stage import stage_settings
    from pipeline.train.config import TrainConfig
    from pipeline.train.loop import run_train

    flags = {"max_steps": 1, "device": "cpu", "lr": 3e-4, "ttt_steps": 2, "fc_norm": False}
    values = stage_settings(TrainConfig, None, flags)
    train = json.loads(
        (
            run_train(TrainConfig(capture_dir=toy.capture, out_dir=tmp_path / "d", **values)) / "resolved.json"
        ).read_text()
    )["train"]
    assert (train["lr"], train["ttt_steps"], train["fc_norm"]) == (3e-4, 2, False)  # given
    assert train["norm_output"] is True and train["batch_tokens"] == 8192 and train["recipe"] == "small"  # the row's
    assert train["recipe_filled"] == [n for n in RECIPE_FIELDS if n not in ("lr", "ttt_steps", "fc_norm")]


def test_an_unsized_target_trains_on_the_plain_defaults_and_says_why(toy, tmp_path, capsys, monkeypatch):
    from pipeline.train import recipes
    from pipeline.train.config import TrainConfig
    from pipeline.train.loop import run_train

    def unsized(model_dir):
        raise DraftsetError(f"no *.safetensors in {model_dir}: cannot size the target for its default recipe")

    monkeypatch.setattr(recipes, "target_parameters", unsized)
    ckpt = run_train(TrainConfig(capture_dir=toy.capture, out_dir=tmp_path / "d", max_steps=1, device="cpu"))
    train = json.loads((ckpt / "resolved.json").read_text())["train"]
    assert train["recipe"] == "defaults" and "cannot size the target" in train["recipe_source"]
    assert (train["lr"], train["ttt_steps"], train["epochs"], train["fc_norm"]) == (1e-4, 7, 1, False)
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("train: recipe")]
    assert "cannot size the target" in line and "plain defaults batch_tokens 8192, lr 0.0001" in line


def test_a_resume_goes_on_with_what_the_interrupted_run_trained_with_not_today_s_row(toy, tmp_path, capsys):
    """`train --resume` without the first run's flags: the settings it was not given come from the interrupted
    run's resolved.json (a row's values would train another sequence, which the resume check refuses)."""
    from pipeline.stage import stage_settings
    from pipeline.train.config import TrainConfig
    from pipeline.train.loop import run_train
    from tests.kits.draft_toy import plain_config

    def settings(flags: dict) -> dict:
        return stage_settings(TrainConfig, None, {"device": "cpu", "save_every": 1, **flags})

    def trained(out) -> dict:
        return json.loads((out / "train" / "checkpoint" / "resolved.json").read_text())["train"]

    out = tmp_path / "d"
    run_train(TrainConfig(capture_dir=toy.capture, out_dir=out, **settings({"max_steps": 1, "ttt_steps": 2})))
    assert trained(out)["ttt_steps"] == 2 and trained(out)["recipe"] == "small"
    run_train(TrainConfig(capture_dir=toy.capture, out_dir=out, **settings({"max_steps": 2, "resume": True})))
    after = trained(out)
    assert (
        after["ttt_steps"] == 2
        and after["recipe"] == "small"
        and after["recipe_filled"] == trained(out)["recipe_filled"]
    )
    assert "recipe: as the interrupted run (" in capsys.readouterr().out

    # a run begun before the table (every setting given, TTT 7, no norms) resumes as it began
    old = tmp_path / "old"
    run_train(plain_config(capture_dir=toy.capture, out_dir=old, max_steps=1, device="cpu", save_every=1))
    assert trained(old)["recipe"] is None
    run_train(TrainConfig(capture_dir=toy.capture, out_dir=old, **settings({"max_steps": 2, "resume": True})))
    resumed = trained(old)
    assert (resumed["ttt_steps"], resumed["fc_norm"], resumed["recipe"]) == (7, False, "resumed")
