"""Where each regenerate setting comes from: a flag given, else the --config file, else the environment
(DRAFTSET_TARGET_ENDPOINTS / DRAFTSET_TARGET_MODEL), else RegenConfig's default; a derived field in the file
is refused in one line naming it."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from catalog.errors import DraftsetError
from pipeline.cli.app import app
from pipeline.regenerate.config import RegenConfig, load_config

ENV = {"endpoints": ["http://env:1"], "model": "env-model"}


def test_flag_over_file_over_env_over_default(tmp_path):
    path = tmp_path / "regen.yaml"
    path.write_text("endpoints: [http://file:1]\ntemperature: 0.2\nseed: 7\n")
    default = load_config(None, mix="m", env=ENV)
    assert (default.endpoints, default.model, default.temperature) == (["http://env:1"], "env-model", 0.7)
    from_file = load_config(path, mix="m", env=ENV)
    assert from_file.endpoints == ["http://file:1"] and from_file.model == "env-model"  # the file over the env
    assert (from_file.temperature, from_file.seed, from_file.top_p) == (0.2, 7, 1.0)  # top_p: the default
    flagged = load_config(path, mix="m", env=ENV, endpoints=["http://flag:1"], temperature=0.9, seed=None)
    assert flagged.endpoints == ["http://flag:1"] and flagged.temperature == 0.9
    assert flagged.seed == 7  # a flag left out (None) lets the file's value through


def test_a_shorthand_flag_is_over_the_file_s_partitions(tmp_path):
    path = tmp_path / "regen.yaml"
    path.write_text("partitions:\n  - {name: all, concurrency: 9, max_tokens: 5}\nconcurrency: 4\n")
    assert load_config(path, mix="m", env=ENV).partitions[0].concurrency == 4
    assert load_config(path, mix="m", env=ENV, concurrency=2).partitions[0].concurrency == 2


def test_a_derived_key_in_the_file_is_one_line_naming_it(tmp_path):
    path = tmp_path / "regen.yaml"
    path.write_text("mix: other\n")
    with pytest.raises(DraftsetError, match="key 'mix' is derived by the stage") as caught:
        load_config(path, mix="m", env=ENV)
    assert "\n" not in str(caught.value)


def test_no_endpoint_from_anywhere_is_one_clear_error():
    with pytest.raises(DraftsetError, match="no target endpoint given"):
        load_config(None, mix="m")


def test_the_cli_reads_flags_file_and_environment_in_that_order(tmp_path, monkeypatch):
    import pipeline.regenerate.run as run

    seen: list[RegenConfig] = []

    def stop(config, *_, **__):
        seen.append(config)
        raise SystemExit(0)

    monkeypatch.setattr(run, "run_regenerate", stop)
    monkeypatch.setattr("pipeline.cli.known.check_mix", lambda mix: None)
    monkeypatch.setenv("DRAFTSET_TARGET_ENDPOINTS", '["http://env:1"]')
    monkeypatch.setenv("DRAFTSET_TARGET_MODEL", "env-model")
    from pipeline.settings import settings

    settings.cache_clear()
    path = tmp_path / "regen.json"
    path.write_text('{"endpoints": ["http://file:1"], "shard": "1/4", "retry": {"max_attempts": 3}}')
    done = CliRunner().invoke(app, ["regenerate", "m", "--config", str(path), "--timeout", "9", "--no-thinking"])
    assert done.exit_code == 0, done.output
    config = seen[-1]
    assert config.endpoints == ["http://file:1"] and config.model == "env-model" and config.shard.label == "1/4"
    assert (config.retry.max_attempts, config.retry.timeout_s, config.thinking) == (3, 9.0, False)
    done = CliRunner().invoke(app, ["regenerate", "m", "--config", str(path), "--endpoint", "http://flag:1"])
    assert done.exit_code == 0, done.output
    assert seen[-1].endpoints == ["http://flag:1"]
    settings.cache_clear()


def test_python_m_takes_the_same_flags_in_the_same_order(tmp_path):
    from pipeline.regenerate.__main__ import parser
    from pipeline.stage.config import flag_fields

    path = tmp_path / "regen.toml"
    path.write_text('endpoints = ["http://file:1"]\ntemperature = 0.2\nseed = 7\n')
    args = parser().parse_args(["m", "--config", str(path), "--seed", "3", "--no-thinking", "--shard", "0/2"])
    given = {name: getattr(args, name) for name in flag_fields(RegenConfig)}
    config = load_config(args.config, mix=args.mix, **given)  # a stage's own entry point takes no environment
    assert (config.endpoints, config.model, config.temperature, config.seed) == (["http://file:1"], None, 0.2, 3)
    assert config.thinking is False and config.shard.label == "0/2"
    assert args.home == Path("draftset-home") and parser().parse_args(["m", "--home", "h"]).home == Path("h")


def test_python_m_reads_no_environment():
    source = (Path(__file__).parents[3] / "pipeline" / "regenerate" / "__main__.py").read_text()
    assert "pipeline.settings" not in source and "os.environ" not in source and "getenv" not in source


def test_python_m_without_an_endpoint_is_one_line_naming_its_own_flags(tmp_path):
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "pipeline.regenerate", "m", "--home", str(tmp_path)],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "DRAFTSET_TARGET_ENDPOINTS": '["http://env:1"]'},  # not read here
        cwd=Path(__file__).parents[3],
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "no target endpoint given" in done.stderr and "DRAFTSET_TARGET" not in done.stderr
