"""The lever table: accuracy, intervals and the change against the base run, from a run's record."""

import json
from pathlib import Path

import pytest

from eval.bench.real_target_levers import RECORD, lever_rows, main, markdown, wilson


def record(base: list[float], lever: list[float]) -> dict:
    metrics = {"steps": 300, "rank0_tokens": 1000}
    return {
        "heldout_tokens": 1000,
        "heldout_rows": 8,
        "recipes": {"lever-base": {"lr": 1e-3}, "lever-x": {"lr": 2e-3}},
        "failed": {"lever-y": "out of memory"},
        "stages": {
            "regenerate": {"counts": {"out": 1234}},
            "train": {
                "lever-base": {**metrics, "heldout_step_accuracy": base},
                "lever-x": {**metrics, "heldout_step_accuracy": lever},
                "lever-z": {**metrics, "heldout_step_accuracy": None},  # not evaluated: no row
            },
        },
    }


def test_wilson_brackets_the_proportion_and_narrows_with_more_trials():
    lo, hi = wilson(0.4, 100)
    assert lo < 0.4 < hi
    lo2, hi2 = wilson(0.4, 10_000)
    assert lo < lo2 < 0.4 < hi2 < hi


def test_each_lever_is_set_against_the_base_at_its_first_and_its_deepest_shared_step():
    rows = {r["run"]: r for r in lever_rows(record([0.5, 0.4, 0.3], [0.6, 0.45]))}
    assert set(rows) == {"lever-base", "lever-x"}
    assert rows["lever-x"]["vs_base_first"] == pytest.approx(0.1)
    assert rows["lever-x"]["vs_base_last"] == pytest.approx(0.05)  # step 1: the deepest both have
    assert "vs_base_first" not in rows["lever-base"]


def test_the_table_names_what_each_lever_changes_and_what_did_not_train():
    rec = record([0.5, 0.4], [0.6, 0.45])
    table = markdown(lever_rows(rec), rec)
    assert "| lever-x | lr 0.002 |" in table
    assert "lever-y | not trained: out of memory" in table
    assert "+0.100" in table


def test_the_kept_record_gives_a_table_and_a_plot(tmp_path: Path):
    out = tmp_path / "levers.png"
    table = main(["--record", str(RECORD), "--plot", str(out)])
    assert "lever-eagle3" in table and out.stat().st_size > 10_000


def test_a_record_without_accuracies_is_one_clear_error(tmp_path: Path):
    path = tmp_path / "empty.json"
    path.write_text(json.dumps({**record([], []), "stages": {"train": {}}}))
    with pytest.raises(SystemExit, match="no run with held-out accuracy"):
        main(["--record", str(path)])


def test_a_record_names_its_base_and_check_drafts_replay_is_a_column():
    rec = record([0.5, 0.4], [0.6, 0.5])
    rec["base"] = "lever-x"  # the capacity set compares against the main run, not lever-base
    rec["recipes"] = {"lever-x": {"lr": 2e-3, "epochs": 8, "max_steps": 9}, "lever-base": {"lr": 1e-3, "max_steps": 9}}
    replay = {"accept_length": 2.2, "accept_length_interval": {"low": 2.1, "high": 2.3}}
    rec["stages"]["check"] = {"lever-base": {"tables": [{"rows": [replay]}]}}
    rows = {r["run"]: r for r in lever_rows(rec)}
    assert rows["lever-base"]["vs_base_first"] == pytest.approx(-0.1)  # against lever-x now
    assert "vs_base_first" not in rows["lever-x"] and rows["lever-base"]["replay"] == (2.2, 2.1, 2.3)
    table = markdown(list(rows.values()), rec)
    assert "lever-x (the reference)" in table and "2.200 [2.100, 2.300]" in table
    assert "| lever-base | lr 0.001 |" in table  # epochs differ only on paper: both runs stop at max_steps


def test_the_capacity_record_renders():
    table = main(["--record", str(Path(RECORD).with_name("real_target_capacity.json"))])
    assert "main (the reference)" in table and "draft_intermediate_size 3072" in table


def _check(rounds: list[list[int]]) -> dict:
    """A check draft record's headline row with each prompt's rounds."""
    headline = {"accept_length": 1.0, "accept_length_interval": {"low": 0, "high": 2}, "rounds_per_prompt": rounds}
    return {"tables": [{"rows": [headline]}]}


def test_rounds_per_prompt_in_the_checks_give_a_paired_difference_against_the_base():
    rec = record([0.5, 0.4], [0.6, 0.5])
    base = [[3] * 10, [0] * 10, [1] * 10]
    lever = [
        [4 if i % 2 else 3 for i in range(10)],
        [1 if i % 2 else 0 for i in range(10)],
        [2 if i % 2 else 1 for i in range(10)],
    ]
    rec["stages"]["check"] = {"lever-base": _check(base), "lever-x": _check(lever)}
    rows = {r["run"]: r for r in lever_rows(rec)}
    assert "paired" not in rows["lever-base"] and rows["lever-x"]["paired"].value == pytest.approx(0.5)
    assert "Δ replayed AL, paired over prompts" in markdown(list(rows.values()), rec)


def _measure(rounds: list[list[int]], depth: int) -> dict:
    """A check accept-length record's configured row at one depth with each prompt's rounds."""
    interval = {"value": 2.0, "low": 1.5, "high": 2.5}
    row = {"wiring": "configured", "steps": depth, "accept_length_interval": interval, "rounds_per_prompt": rounds}
    return {"tables": [{"rows": [row, {**row, "wiring": "shifted +1"}]}]}


def test_decoded_accept_length_is_read_at_the_trained_step_count_and_paired_against_the_base():
    rec = record([0.5, 0.4], [0.6, 0.5])
    rec["base"] = "main"
    rec["stages"]["train"]["main"] = {"steps": 300, "rank0_tokens": 1000, "heldout_step_accuracy": [0.5, 0.4]}
    base = [[1] * 10, [2] * 10]
    lever = [[2] * 10, [2] * 10]
    rec["stages"]["measures"] = {"300": _measure(base, 3)}
    # an earlier measurement (at 100 steps) is not the draft the table describes
    rec["stages"]["measures_by_run"] = {"lever-x": {"100": _measure(base, 3), "300": _measure(lever, 3)}}
    rows = {r["run"]: r for r in lever_rows(rec)}
    assert set(rows["main"]["decoded"]) == {3} and rows["main"]["decoded_paired"] == {}
    assert rows["lever-x"]["decoded_paired"][3].value == pytest.approx(0.5)  # 2.5 vs 2.0 tokens a round
    assert "decoded" not in rows["lever-base"]
    table = markdown(list(rows.values()), rec)
    assert "decoded AL @3" in table and "Δ decoded AL @3, paired" in table and "+0.500" in table


def test_the_decoded_wide_record_renders_both_depths():
    table = main(["--record", str(Path(RECORD).with_name("real_target_wide16k_decoded.json"))])
    assert "decoded AL @3" in table and "decoded AL @5" in table and "Δ decoded AL @5, paired" in table
