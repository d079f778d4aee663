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
