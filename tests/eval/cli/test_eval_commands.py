"""eval/cli: eval registers its own commands on any Typer app (pipeline's shell finds them through the
`draftset.commands` entry points), and they run as commands: `check estimate` computes its speedups."""

from __future__ import annotations

import json

import typer
from typer.main import get_command
from typer.testing import CliRunner

from eval.cli import check_cmd, report_cmd


def test_register_adds_check_and_report_to_an_app():
    app = typer.Typer()
    check_cmd.register(app)
    report_cmd.register(app)
    root = get_command(app)
    assert {"check", "report"} <= set(root.commands)  # type: ignore[attr-defined]
    assert {"draft", "accept-length", "serve", "estimate", "pilot"} <= set(root.commands["check"].commands)  # type: ignore[attr-defined]


def test_check_estimate_through_the_registered_command():
    app = typer.Typer()
    check_cmd.register(app)
    args = ["check", "estimate", "--accept-length", "2.4", "--accept-length", "3.0", "--baseline-tps", "90"]
    args += ["--observed-tps", "82.3", "--observed-accept-length", "2.1", "--json"]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    [table] = json.loads(done.stdout)["tables"]
    rows = {r["accept_length"]: r for r in table["rows"]}
    assert set(rows) == {2.4, 3.0} and rows[3.0]["speedup_ratio"] > rows[2.4]["speedup_ratio"] > 1.0
    cost = rows[2.4]["round_cost_target_steps"]  # one calibrated cost: speedup = AL / cost at every AL
    assert all(abs(r["speedup_ratio"] - al / cost) < 1e-9 for al, r in rows.items())


def test_check_pilot_trains_with_the_recipe_and_forecasts_at_its_full_build_steps(tmp_path, monkeypatch):
    """Only what is given reaches TrainConfig (the train stage's recipe fills the rest, as for `draftset train`),
    and the forecast is at the steps that recipe would train on the whole build."""
    import struct

    import eval.forecast_pilot as forecast_pilot
    import pipeline.train.loop as loop
    from eval.forecast_pilot import Pilot, PilotPoint
    from eval.specdecode.evaluate import Measurement
    from pipeline.train.recipes import RECIPE_FIELDS, RECIPES

    model = tmp_path / "model"
    model.mkdir()
    header = json.dumps({"w": {"dtype": "F32", "shape": [1000, 135], "data_offsets": [0, 0]}}).encode()
    (model / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)  # 135,000 parameters: small
    configs = []
    monkeypatch.setattr(loop, "run_train", lambda config, catalog=None: configs.append(config))
    monkeypatch.setattr(check_cmd, "catalog", lambda: None)
    full = {f"r{i}": 100 for i in range(400)}  # 40,000 tokens: 5 batches of 8,192 an epoch

    def pilot(build, model_dir, out, fractions, budget, train, *args, **kwargs):
        train(tmp_path / "sub", tmp_path / "draft")
        point = PilotPoint(0.5, 200, 1.0, Measurement("d", "t", "cpu", 1, 1, 1.0), 4000, "small")
        return Pilot(points=[point], full_lengths=full)

    monkeypatch.setattr(forecast_pilot, "run_pilot", pilot)
    app = typer.Typer()
    check_cmd.register(app)
    args = ["check", "pilot", str(tmp_path / "build"), "--model", str(model), "--out", str(tmp_path / "out")]
    done = CliRunner().invoke(app, [*args, "--lr", "0.002"], env={"COLUMNS": "300"})
    assert done.exit_code == 0, done.output
    (config,) = configs
    assert config.lr == 0.002 and set(RECIPE_FIELDS) & config.model_fields_set == {"lr"}  # the rest: the recipe's
    epochs = min(-(-RECIPES[0].min_steps // 5), RECIPES[0].max_epochs)  # the floor over 5 batches an epoch, capped
    assert f"at this run's {epochs * 5:,} optimizer steps" in done.output
