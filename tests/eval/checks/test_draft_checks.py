"""The checks: wiring diagnostic, serving lint (the four field bugs + clean), speedup estimate."""

import json
import shutil

import pytest
from safetensors.torch import load_file, save_file
from typer.testing import CliRunner

from eval.checks.draft_check import check_draft
from eval.checks.estimate import calibrated_round_cost, estimate
from eval.checks.serve_check import check_serve

CLEAN = (
    "python -m sglang.launch_server --model-path {model} --speculative-algorithm EAGLE3 "
    "--speculative-draft-model-path {draft} --speculative-num-steps 3 --speculative-eagle-topk 1 "
    "--speculative-num-draft-tokens 4 --context-length 64"
)


def launch(toy, draft=None, **changes) -> str:
    cmd = CLEAN.format(model=toy.model, draft=draft or toy.draft)
    for old, new in changes.items():
        cmd = cmd.replace(old.replace("_", "-"), new)
    return cmd


def test_configured_wiring_beats_every_wrong_one(toy):
    r = check_draft(toy.draft, toy.capture)
    print("\n" + "\n".join(f"{w.name:32s} {w.hf_ids} AL {w.accept_length:.3f}" for w in [r.train, *r.wirings]))
    print(r.verdict())
    names = {w.name for w in r.wirings}
    assert {"shifted +1", "shifted -1", "order swapped", "last layer instead of first"} <= names
    assert r.configured_is_best and all(r.wirings[0].accept_length > w.accept_length for w in r.wirings[1:])
    assert "is the best" in r.verdict()
    # wirings run on the headline rows (held-out where there are any): recomputed states == the capture's
    assert r.wirings[0].accept_length == pytest.approx(r.headline.accept_length, abs=0.05)
    # each row's rounds are kept, in the rows' order, for paired comparisons of drafts on the same rows
    from eval.checks.wiring_json import wiring_record

    head = r.headline
    assert [a for row in head.per_prompt for a in row] == head.rounds and len(head.per_prompt) > 1
    record = wiring_record(head)
    assert record["rounds_per_prompt"] == head.per_prompt
    assert record["accept_length_prompt_interval"]["value"] == pytest.approx(head.accept_length)
    assert set(record["accept_length_by_steps"]) == {str(k) for k in range(1, r.steps + 1)}


def test_clean_configuration_passes(toy):
    r = check_serve(toy.draft, launch(toy))
    assert r.clean, [f.problem for f in r.findings]


def test_field_bug_eagle_instead_of_eagle3(toy):
    r = check_serve(toy.draft, launch(toy).replace("EAGLE3", "EAGLE"))
    [f] = r.findings
    assert f.flag == "--speculative-algorithm" and "1.00" in f.why
    assert "--speculative-algorithm EAGLE3" in r.corrected()


def test_field_bug_one_step_sixteen_draft_tokens(toy):
    cmd = (
        launch(toy)
        .replace("--speculative-num-steps 3", "--speculative-num-steps 1")
        .replace("--speculative-num-draft-tokens 4", "--speculative-num-draft-tokens 16")
    )
    r = check_serve(toy.draft, cmd)
    [f] = r.findings
    assert "num_steps + 1 = 2" in f.why
    assert "--speculative-num-steps 3" in r.corrected() and "--speculative-num-draft-tokens 4" in r.corrected()
    assert check_serve(toy.draft, r.corrected()).clean


def _planted(toy, tmp_path):
    bad = tmp_path / "draft"
    shutil.copytree(toy.draft, bad)
    return bad


def test_field_bug_embed_wiring_vs_served_layers(toy, tmp_path):
    """Training concatenated [embed, 3, 31]-style taps while SGLang serves [3, 31, 59]-style ids."""
    bad = _planted(toy, tmp_path)
    manifest = json.loads((bad / "capture_manifest.json").read_text())
    manifest["taps"].update(aux=[0, 4, 6], sglang_ids=None, vllm_ids=[0, 4, 6])
    (bad / "capture_manifest.json").write_text(json.dumps(manifest))
    cfg = json.loads((bad / "config.json").read_text())
    cfg["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = [3, 5, 6]  # HF [4, 6, 7]
    (bad / "config.json").write_text(json.dumps(cfg))
    r = check_serve(bad, launch(toy, draft=bad))
    flags = " ".join(f.flag for f in r.findings)
    assert "eagle_aux_hidden_state_layer_ids" in flags
    text = " ".join(f.problem + f.fix for f in r.findings)
    assert "[0, 4, 6]" in text and "captures HF [4, 6, 7]" in text and "--layers 2,4,5" in text
    assert "sglang.layers.mismatch" in {f.rule for f in r.findings}


def test_field_bug_off_by_one_ids_in_sglang_key(toy, tmp_path):
    bad = _planted(toy, tmp_path)
    cfg = json.loads((bad / "config.json").read_text())
    cfg["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = cfg["eagle_aux_hidden_state_layer_ids"]
    (bad / "config.json").write_text(json.dumps(cfg))
    [f] = check_serve(bad, launch(toy, draft=bad)).findings
    assert "one layer late" in f.problem and "[1, 3, 4]" in f.fix


def test_layers0_weight_keys_load_in_both_engines(toy, tmp_path):
    """SGLang 0.5.x and vLLM rename midlayer. to layers.0.: both spellings load (the seed's bug (d) was older SGLang)."""
    bad = _planted(toy, tmp_path)
    w = load_file(str(bad / "model.safetensors"))
    save_file({k.replace("midlayer.", "layers.0."): v for k, v in w.items()}, str(bad / "model.safetensors"))
    assert check_serve(bad, launch(toy, draft=bad)).clean


def test_weight_keys_no_engine_loads(toy, tmp_path):
    bad = _planted(toy, tmp_path)
    w = load_file(str(bad / "model.safetensors"))
    save_file({k.replace("midlayer.", "decoder.0."): v for k, v in w.items()}, str(bad / "model.safetensors"))
    [f] = check_serve(bad, launch(toy, draft=bad)).findings
    assert f.rule == "weights.sglang.not_loaded" and "decoder.0." in f.problem and "silently" in f.why
    [v] = [
        f
        for f in check_serve(
            bad,
            f"vllm serve {toy.model} --max-model-len 64 --speculative-config "
            f'\'{{"method": "eagle3", "model": "{bad}", '
            f'"num_speculative_tokens": 3}}\'',
        ).findings
    ]
    assert v.rule == "weights.vllm.refused"


def test_cli_exit_codes_and_template_mismatch(toy, tmp_path, home):
    pytest.importorskip("langgraph", reason="the full CLI needs the find stack (absent on GPU hosts)")
    from pipeline.cli.app import app

    runner = CliRunner()
    ok = runner.invoke(app, ["check", "serve", str(toy.draft), "--", *launch(toy).split()])
    assert ok.exit_code == 0, ok.output
    other = tmp_path / "other.jinja"
    other.write_text("{{ messages }}")
    bad = runner.invoke(
        app,
        ["check", "serve", str(toy.draft), "--no-thinking", "--", *launch(toy).split(), "--chat-template", str(other)],
    )
    assert bad.exit_code == 1
    assert "--chat-template" in bad.output and "thinking" in bad.output and "corrected command" in bad.output


def test_estimate_field_figures_break_even_near_2_5():
    five = calibrated_round_cost(90, 82.3, 2.1)  # 5 draft tokens
    sixteen = calibrated_round_cost(90, 74.9, 2.2)  # 16 draft tokens
    assert 2.25 < five < 2.35 and 2.6 < sixteen < 2.7 and 2.4 < (five + sixteen) / 2 < 2.5
    slow, even, fast = estimate([2.1, 2.47, 3.36], (five + sixteen) / 2)
    assert slow.speedup < 1 < fast.speedup and even.speedup == pytest.approx(1.0, abs=0.01)


def test_estimate_cli_refuses_partial_or_zero_calibration():
    pytest.importorskip("langgraph", reason="the full CLI needs the find stack (absent on GPU hosts)")
    from pipeline.cli.app import app

    runner = CliRunner()
    partial = runner.invoke(app, ["check", "estimate", "--accept-length", "2.4", "--baseline-tps", "90"])
    assert "calibration needs all of" in str(partial.exception)
    calibrated = [
        "check",
        "estimate",
        "--accept-length",
        "2.4",
        "--observed-tps",
        "82.3",
        "--observed-accept-length",
        "2.1",
    ]
    zero = runner.invoke(app, [*calibrated, "--baseline-tps", "0"])
    assert "must be positive" in str(zero.exception)  # not silently the uncalibrated default
    ok = runner.invoke(app, [*calibrated, "--baseline-tps", "90"])
    assert ok.exit_code == 0 and "break-even accept length: 2.30" in ok.output
