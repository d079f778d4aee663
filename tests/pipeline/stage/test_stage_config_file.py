"""`--config FILE` on the stage commands: strict keys, file values used, explicit flags on top, defaults once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalog.errors import DraftsetError
from pipeline.build.config import BuildConfig
from pipeline.dedup.config import DedupConfig
from pipeline.mix.config import MixConfig
from pipeline.stage import stage_settings
from tests.pipeline.mix.test_mix import SOURCES, _ingest


def _messages(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.strip() and not line.lstrip().startswith("next:")]


@pytest.mark.parametrize("command", [["dedup"], ["mix", "m"], ["ingest"], ["build", "m"]])
def test_unknown_key_is_one_line_naming_key_and_file(home, tmp_path, draftset, command):
    bad = tmp_path / "stage.json"
    bad.write_text(json.dumps({"threshhold": 0.5}))
    if command[0] == "build":  # build checks that its mix exists before it reads its settings
        (home / "data" / "mix" / "m").mkdir(parents=True)
    done = draftset(*command, "--config", str(bad))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    [line] = _messages(done.stderr)
    assert "'threshhold'" in line and str(bad) in line.replace("\n", "")


def test_mix_takes_file_values_and_flags_override_them(home, tmp_path, sources, draftset):
    _ingest(home, sources, SOURCES)
    settings = tmp_path / "mix.toml"
    settings.write_text("samples = 12\nseed = 3\nthreshold = 0.9\n")
    done = draftset("mix", "from-file", "--config", str(settings))
    assert done.returncode == 0, done.stderr
    manifest = json.loads((home / "data" / "mix" / "from-file" / "manifest.json").read_text())
    assert manifest["seed"] == 3 and manifest["samples_selected"] == 12 and manifest["config"]["threshold"] == 0.9
    assert manifest["config"]["max_prompt_tokens"] == MixConfig.model_fields["max_prompt_tokens"].default

    done = draftset("mix", "flagged", "--config", str(settings), "--seed", "5", "--samples", "7")
    assert done.returncode == 0, done.stderr
    manifest = json.loads((home / "data" / "mix" / "flagged" / "manifest.json").read_text())
    assert manifest["seed"] == 5 and manifest["samples_selected"] == 7  # the flags win
    assert manifest["config"]["threshold"] == 0.9  # the file's value where no flag was given


def test_file_values_are_checked_against_the_model(tmp_path):
    path = tmp_path / "dedup.yaml"
    path.write_text("threshold: 1.5\n")
    with pytest.raises(DraftsetError, match=r"dedup.yaml: invalid value 1.5 for threshold") as exc:
        stage_settings(DedupConfig, path, {}, settable=["threshold"])
    assert "\n" not in str(exc.value)
    path.write_text("length_unit: tokens\n")  # a field, but one the stage derives (from --tokenizer)
    with pytest.raises(DraftsetError, match="'length_unit' is derived by the stage"):
        stage_settings(DedupConfig, path, {}, settable=["threshold"])
    path.write_text("- just\n- a list\n")
    with pytest.raises(DraftsetError, match="must hold a mapping"):
        stage_settings(DedupConfig, path, {}, settable=["threshold"])
    path.write_text("max_length: '512'\n")  # strict, as the model: a string is not a number
    with pytest.raises(DraftsetError, match="max_length"):
        stage_settings(BuildConfig, path, {}, settable=["max_length"])


def test_defaults_come_from_the_model_and_unset_fields_stay_unset():
    values = stage_settings(
        BuildConfig, None, {"max_length": 512}, settable=["max_length", "thinking", "per_turn"], unset=["thinking"]
    )
    assert values == {"max_length": 512, "per_turn": BuildConfig.model_fields["per_turn"].default}


def test_python_m_entry_points_take_flags_and_config_from_the_model(tmp_path):
    """`python -m pipeline.train/capture` build their flags from the config models (no torch needed to parse)."""
    import argparse

    from pipeline.capture.config import CaptureConfig
    from pipeline.stage import add_field_arguments, parsed_settings
    from pipeline.train.config import TrainConfig

    settings = tmp_path / "train.json"
    settings.write_text(json.dumps({"epochs": 3, "lr": 0.01, "model_dir": "/models/target", "layers": [2, 4]}))
    parser = argparse.ArgumentParser()
    add_field_arguments(parser, TrainConfig)
    args = parser.parse_args(["--config", str(settings), "--epochs", "5", "--online"])
    values = parsed_settings(args, TrainConfig)
    assert values["epochs"] == 5 and values["lr"] == 0.01 and values["online"] is True  # flags over the file
    assert values["layers"] == [2, 4] and str(values["model_dir"]) == "/models/target"
    assert values["grad_clip"] == TrainConfig.model_fields["grad_clip"].default  # the model's default
    assert "batch_tokens" not in values  # a recipe setting left out: the target's recipe decides (train/recipes.py)
    config = TrainConfig(build_dir=tmp_path, capture_dir=None, out_dir=tmp_path / "out", **values)
    assert config.epochs == 5 and config.model_dir == Path("/models/target")
    assert "epochs" in config.model_fields_set and "batch_tokens" not in config.model_fields_set

    parser = argparse.ArgumentParser()
    add_field_arguments(parser, CaptureConfig)
    args = parser.parse_args(["--layers", "2,16,29", "--dtype", "float32"])
    assert parsed_settings(args, CaptureConfig)["layers"] == [2, 16, 29]
    with pytest.raises(SystemExit):  # not one of the model's Literal values: argparse's own error
        parser.parse_args(["--dtype", "fp8"])
    settings.write_text(json.dumps({"epoch": 3}))
    args = parser.parse_args(["--config", str(settings)])
    with pytest.raises(DraftsetError, match="unknown key 'epoch'"):
        parsed_settings(args, CaptureConfig)
