"""One declaration per setting: each stage's config model says which fields a person sets (with help and
default) and which the stage derives; `draftset STAGE`, `python -m pipeline.STAGE` and --config offer exactly the
settable ones, with the model's words. Stages come from the registry (pipeline/stages.py)."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json

import click
import pytest
from pydantic_core import to_jsonable_python
from typer.main import get_command
from typer.testing import CliRunner

from catalog.errors import DraftsetError
from pipeline.cli.app import app
from pipeline.cli.stage_options import option_flags
from pipeline.stage import stage_settings
from pipeline.stage.config import (
    declares_settings,
    field_flag,
    field_help,
    flag_fields,
    settable_fields,
    settings_schema,
)
from pipeline.stages import stage_configs

STAGES = stage_configs()
DECLARED = sorted(k for k, m in STAGES.items() if declares_settings(m))
# Options of a stage command that are not settings of its model: inputs, outputs, output format.
NOT_SETTINGS = {"config_file", "as_json", "out", "fresh", "model", "help", "tokenizer", "workers", "executor"}
NOT_SETTINGS |= {"plan", "repo", "all_rows", "weight", "overwrite", "source", "progress"}
NOT_SETTINGS |= {"home"}  # where a stage's own entry point finds the home (the CLI's is DRAFTSET_HOME)


def test_every_stage_declares_its_settings():
    assert DECLARED == sorted(STAGES)
    assert {"train", "capture", "regenerate"} <= set(DECLARED)


@pytest.mark.parametrize("stage", DECLARED)
def test_every_settable_field_has_help_and_every_field_is_settable_or_derived(stage):
    model = STAGES[stage]
    assert settable_fields(model)
    assert [n for n in settable_fields(model) if not field_help(model, n).strip()] == []
    assert set(settings_schema(model)) == set(settable_fields(model))  # the service's hook: the same fields
    assert all(settings_schema(model)[n].get("description") == field_help(model, n) for n in settable_fields(model))


def _not_a_setting(stage: str, name: str) -> bool:
    """An option of the command that its model does not declare (a name such as `model` or `tokenizer` is a
    setting of one stage, regenerate's, and an input of others)."""
    return name in NOT_SETTINGS and name not in settable_fields(STAGES[stage])


def _cli_options(stage: str) -> dict[str, click.Parameter]:
    command = get_command(app).commands[stage]  # type: ignore[attr-defined]
    return {
        p.name: p
        for p in command.params
        if p.param_type_name == "option" and p.name and not _not_a_setting(stage, p.name)
    }


def _module_options(stage: str) -> dict[str, argparse.Action] | None:
    """`python -m pipeline.STAGE`'s options, for a stage that has that entry point (GPU hosts: capture, train)."""
    if importlib.util.find_spec(f"pipeline.{stage}.__main__") is None:
        return None
    parser = importlib.import_module(f"pipeline.{stage}.__main__").parser()
    skip = {"help", "config", "fresh"}
    return {
        a.dest: a
        for a in parser._actions
        if a.option_strings and a.dest not in skip and a.const is not False and not _not_a_setting(stage, a.dest)
    }


@pytest.mark.parametrize("stage", DECLARED)
def test_the_cli_and_python_m_offer_the_model_s_settings_with_the_model_s_words(stage):
    model = STAGES[stage]
    cli, module = _cli_options(stage), _module_options(stage)
    expected = {n: field_flag(model, n).split("/")[0] for n in flag_fields(model)}  # `--on/--off`: the first
    shown = option_flags(get_command(app).commands[stage])  # type: ignore[attr-defined]
    assert {n: f for n, f in shown.items() if not _not_a_setting(stage, n)} == expected
    assert set(settable_fields(model)) - set(flag_fields(model)) == {
        n for n in settable_fields(model) if n not in cli
    }  # a setting without a flag is a file-only one, declared so
    assert module is None or {n: a.option_strings[0] for n, a in module.items()} == expected
    for name in expected:
        words = field_help(model, name)
        assert words in (getattr(cli[name], "help", None) or ""), name
        assert module is None or words in (module[name].help or ""), name


@pytest.mark.parametrize("stage", DECLARED)
def test_config_files_take_every_setting_and_refuse_every_derived_field(stage, tmp_path):
    model = STAGES[stage]
    path = tmp_path / "settings.json"
    for name, info in model.model_fields.items():
        value = None if info.is_required() else info.get_default(call_default_factory=True)
        path.write_text(json.dumps({name: to_jsonable_python(value, fallback=str)}))  # nested models as in a file
        if name not in settable_fields(model):
            with pytest.raises(DraftsetError, match=f"'{name}' is derived by the stage"):
                stage_settings(model, path, {})
        elif (
            not info.is_required()
            or info.annotation is type(None)
            or None.__class__ in getattr(info.annotation, "__args__", ())
        ):
            assert name in stage_settings(model, path, {})
        else:  # a required setting that cannot be None: the key is taken, its value checked against the type
            with pytest.raises(DraftsetError, match=f"invalid value None for {name}"):
                stage_settings(model, path, {})


def test_train_max_seconds_is_taken_by_the_cli_s_config_and_by_python_m(home, tmp_path):
    """The drift issue #32 names: `draftset train --config` refused max_seconds while `python -m` took it."""
    path = tmp_path / "train.yaml"
    path.write_text("max_seconds: 90\nschedule: cosine\n")
    done = CliRunner().invoke(app, ["train", "no-such-capture", "--config", str(path)])
    assert "no-such-capture" in str(done.exception) and "derived" not in str(done.exception)  # read past the keys
    from pipeline.stage import parsed_settings
    from pipeline.train.__main__ import parser
    from pipeline.train.config import TrainConfig

    args = parser().parse_args(["in", "out", "--config", str(path), "--max-seconds", "30"])
    values = parsed_settings(args, TrainConfig)
    assert values["max_seconds"] == 30 and values["schedule"] == "cosine"  # the flag over the file
    path.write_text("out_dir: /tmp/elsewhere\n")
    done = CliRunner().invoke(app, ["train", "no-such-capture", "--config", str(path)])
    assert "'out_dir' is derived by the stage" in str(done.exception)


def test_cli_flags_reach_the_stage_settings(tmp_path, monkeypatch):
    """The options the decorator adds arrive as the command's settings, typed (a list parsed, a flag a bool)."""
    import pipeline.cli.draft_cmd as draft_cmd

    seen: dict = {}

    def stop(model, path, flags, **_):
        seen.update(flags)
        raise SystemExit(0)

    monkeypatch.setattr(draft_cmd, "stage_settings", stop)
    done = CliRunner().invoke(
        app, ["train", "x", "--online", "--layers", "2,4,6", "--lr", "0.01", "--schedule", "cosine"]
    )
    assert done.exit_code == 0, done.output
    assert (
        seen["online"] is True and seen["layers"] == [2, 4, 6] and seen["lr"] == 0.01 and seen["schedule"] == "cosine"
    )
    assert seen["epochs"] is None  # left out: the --config file's value (or the model's default) shows through
    bad = CliRunner().invoke(app, ["train", "x", "--layers", "2,x"])
    assert "--layers '2,x' is not a comma-separated list of integers" in str(bad.exception)


def test_an_inherited_setting_left_out_is_the_stage_s_to_decide():
    """build's thinking mode: left out of flags and file, it gets no default here (the regeneration's mode wins)."""
    from pipeline.build.config import BuildConfig

    assert "thinking" not in stage_settings(BuildConfig, None, {})
    assert stage_settings(BuildConfig, None, {"thinking": False})["thinking"] is False
