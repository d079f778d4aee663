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
            "then_check": False, "measure_s": 120.0, "eval_prompts": 16, "eval_tokens": 96, "device": "cpu",
            "main_steps": None, "measure_runs": "main", "lever_set": "first"}  # fmt: skip
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


def fake_launch(complete: bool, recipes: dict | None = None):
    """A training that ends at once: writes the resolved.json a stopped (or finished) `train` leaves."""
    budgets: dict[str, float] = {}

    def launch(run, jobs, model, seconds):
        for name in jobs:
            budgets[name] = seconds
            if recipes is not None:
                recipes[name] = jobs[name]
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


def test_main_steps_caps_the_main_runs_and_a_run_at_its_cap_trains_no_more(tmp_path, monkeypatch):
    recipes: dict = {}
    launch, budgets = fake_launch(complete=False, recipes=recipes)  # each fake run stops at step 10
    monkeypatch.setattr(driver, "launch", launch)
    run = FakeRun(tmp_path, budget_s=600)
    driver.train_stages(run, args(main_steps=20), tmp_path / "model")
    assert {n: r["max_steps"] for n, r in recipes.items()} == {"main": 20, "main-eagle3": 20}
    budgets.clear()
    driver.train_stages(run, args(main_steps=10, then_check=True), tmp_path / "model")  # at the cap: checked only
    assert not budgets and run.state["done"]["measure-main"]


def test_each_measurement_is_kept_by_the_steps_it_measured(tmp_path, monkeypatch):
    launch, _ = fake_launch(complete=False)
    monkeypatch.setattr(driver, "launch", launch)
    run = FakeRun(tmp_path, budget_s=600)
    driver.train_stages(run, args(then_check=True), tmp_path / "model")
    ckpt = run.home / "drafts" / "main" / "train" / "checkpoint" / "resolved.json"
    ckpt.write_text(json.dumps({"metrics": {"complete": False, "steps": 30}}))  # trained on by a later call
    run.state["done"].pop("measure-main")
    driver.train_stages(run, args(checks_only=True), tmp_path / "model")
    assert set(run.state["measures"]) == {"10", "30"}


def test_a_lever_beside_main_is_measured_too_and_kept_under_its_name(tmp_path, monkeypatch):
    recipes: dict = {}
    launch, budgets = fake_launch(complete=False, recipes=recipes)
    monkeypatch.setattr(driver, "launch", launch)
    run = FakeRun(tmp_path, budget_s=600)
    a = args(eagle3_main=False, lever_steps=10**6, lever_set="wide16k", then_check=True,
             measure_runs="main,lever-wide16k")  # fmt: skip
    driver.train_stages(run, a, tmp_path / "model")
    assert set(budgets) == {"main", "lever-wide16k"}  # both trained for the same time
    wide = recipes["lever-wide16k"]
    assert (wide["batch_tokens"], wide["draft_intermediate_size"]) == (16384, 2 * driver.SMOLLM2_MLP)
    measured = {c[2] for c in run.asked if c[:2] == ("check", "accept-length")}
    assert measured == {"main", "lever-wide16k"}
    assert set(run.state["measures"]) == {"10"} and set(run.state["measures_by_run"]["lever-wide16k"]) == {"10"}
    assert run.state["done"]["measure-lever-wide16k"]


def test_a_misspelt_measure_run_is_refused_by_name_not_skipped(tmp_path, monkeypatch):
    launch, _ = fake_launch(complete=False)
    monkeypatch.setattr(driver, "launch", launch)
    run = FakeRun(tmp_path, budget_s=600)
    a = args(eagle3_main=False, lever_steps=10, lever_set="wide16k", then_check=True, measure_runs="main,lever-wide")
    with pytest.raises(SystemExit, match="--measure-runs lever-wide: not a run of this plan .*lever-wide16k"):
        driver.train_stages(run, a, tmp_path / "model")
    assert not [c for c in run.asked if c[:2] == ("check", "accept-length")]


def test_regenerate_spreads_over_every_serve_dev_replica(tmp_path, monkeypatch):
    from pipeline.servers import http

    ports = iter(range(9001, 9100))
    waited: list[str] = []
    monkeypatch.setattr(http, "free_port", lambda: next(ports))
    monkeypatch.setattr(http, "wait_http", lambda url, timeout: waited.append(url))
    run = FakeRun(tmp_path, budget_s=600)
    started: list[list[str]] = []
    monkeypatch.setattr(run, "background", lambda argv, log, stack: started.append(argv))
    for step in ("adapter", "ingest", "mix", "build"):
        run.done(step)
    (run.home / "data" / "build" / driver.MIX).mkdir(parents=True)
    a = args(servers=3, max_batch=2048, batching="static", answer_tokens=192, concurrency=1024, dtype="bfloat16",
             kv_cache="static")  # fmt: skip
    driver.data_stages(run, a, tmp_path / "model", stack=None)
    assert [argv[argv.index("--port") + 1] for argv in started] == ["9001", "9002", "9003"]
    assert all(argv[argv.index("--kv-cache") + 1] == "static" for argv in started)  # each replica as asked
    assert len(waited) == 3 and all("/health" in url for url in waited)
    regen = next(x for x in run.asked if x[0] == "regenerate")
    endpoints = [regen[i + 1] for i, x in enumerate(regen) if x == "--endpoint"]
    assert endpoints == [f"http://127.0.0.1:{port}/v1" for port in (9001, 9002, 9003)]


def test_a_command_that_ignores_ctrl_c_is_terminated_then_killed_within_the_grace():
    """A real child that ignores SIGINT and SIGTERM (as the 2026-12-03 regenerate ignored its Ctrl-C for ~280 s):
    the driver's stop ends it within about two graces and keeps what it printed."""
    import signal
    import subprocess
    import sys
    import time

    code = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN); signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('working', flush=True); time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "working\n"  # its handlers are in place
    t0 = time.monotonic()
    stdout, _ = driver.interrupt(proc, grace_s=0.5)
    assert proc.returncode == -signal.SIGKILL and time.monotonic() - t0 < 5
    polite = subprocess.Popen([sys.executable, "-c", "import time; print('ok', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert polite.stdout is not None and polite.stdout.readline() == "ok\n"
    driver.interrupt(polite, grace_s=5)
    assert polite.returncode != -signal.SIGKILL  # Ctrl-C was enough: no harder signal sent
