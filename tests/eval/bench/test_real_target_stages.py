"""The GPU driver's plan after the data stages: what it trains, how long, and which drafts it checks.

The trainings and checks are fakes here (labelled: they record what the driver asked for and write the resolved.json
a real `train` would); the real stages run on the GPU (eval/bench/real_target_stages_notes.md) and in a CPU dry run.
"""

import argparse
import json
from pathlib import Path

import pytest

from eval.bench import real_target_stages as driver


def args(**over) -> argparse.Namespace:
    base = {"lever_steps": 0, "eagle3_main": True, "main_epochs": 8, "parallel": 8, "checks_only": False,
            "then_check": False, "measure_s": 120.0, "eval_prompts": 16, "eval_tokens": 96, "device": "cpu"}  # fmt: skip
    return argparse.Namespace(**{**base, **over})


class FakeRun(driver.Run):
    """A Run whose commands are recorded, not run (fake: control flow only)."""

    def __init__(self, work: Path, budget_s: float):
        super().__init__(work, work / "out", budget_s)
        (work / "out").mkdir(exist_ok=True)
        self.asked: list[tuple[str, ...]] = []

    def cli(self, *a: str, **kw) -> dict:
        self.asked.append(a)
        return {"measured": a[1]}

    def cli_all(self, commands: dict[str, list[str]], log: str) -> dict:
        self.asked.extend(tuple(c) for c in commands.values())
        return {name: {"checked": name, "exit": 0} for name in commands}


def fake_launch(complete: bool):
    """A training that ends at once: writes the resolved.json a stopped (or finished) `train` leaves."""
    budgets: dict[str, float] = {}

    def launch(run, jobs, model, seconds):
        for name in jobs:
            budgets[name] = seconds
            ckpt = run.home / "drafts" / name / "train" / "checkpoint"
            ckpt.mkdir(parents=True, exist_ok=True)
            (ckpt / "resolved.json").write_text(json.dumps({"metrics": {"complete": complete, "steps": 10}}))
        return []

    return launch, budgets


@pytest.mark.parametrize("then_check", [False, True])
def test_a_run_the_budget_stopped_is_checked_only_when_asked(tmp_path, monkeypatch, then_check):
    launch, budgets = fake_launch(complete=False)
    monkeypatch.setattr(driver, "launch", launch)
    run = FakeRun(tmp_path, budget_s=600)
    driver.train_stages(run, args(then_check=then_check), tmp_path / "model")
    assert set(budgets) == {"main", "main-eagle3"}
    reserve = driver.TAIL_S + (driver.CHECK_DRAFT_S + 120.0 if then_check else 0.0)
    assert all(600 - reserve - 5 < s <= 600 - reserve for s in budgets.values())  # the checks' time kept back
    checked = {a[2] for a in run.asked if a[:2] == ("check", "draft")}
    measured = [a for a in run.asked if a[:2] == ("check", "accept-length")]
    if then_check:
        assert checked == {"main", "main-eagle3"} and len(measured) == 1 and measured[0][2] == "main"
        assert run.state["done"]["check-main"] and run.state["done"]["measure-main"]
    else:  # stopped early and not asked to check: the next call trains on
        assert not checked and not measured


def test_checks_only_trains_nothing_and_checks_what_was_exported(tmp_path, monkeypatch):
    launch, budgets = fake_launch(complete=False)
    run = FakeRun(tmp_path, budget_s=600)
    launch(run, {"main": {}, "main-eagle3": {}}, None, 1.0)  # what an earlier call trained
    budgets.clear()
    monkeypatch.setattr(driver, "launch", launch)
    driver.train_stages(run, args(checks_only=True), tmp_path / "model")
    assert not budgets
    assert {a[2] for a in run.asked if a[:2] == ("check", "draft")} == {"main", "main-eagle3"}


def test_a_call_too_short_for_its_checks_does_not_start_training(tmp_path, monkeypatch):
    launch, budgets = fake_launch(complete=True)
    monkeypatch.setattr(driver, "launch", launch)
    run = FakeRun(tmp_path, budget_s=driver.TAIL_S + driver.CHECK_DRAFT_S + 120 + 30)  # < reserve + 60
    driver.train_stages(run, args(then_check=True), tmp_path / "model")
    assert not budgets
