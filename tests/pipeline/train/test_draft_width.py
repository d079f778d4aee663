"""`train`'s draft_intermediate_size: a wider draft MLP, trained, exported with the width it has, served as any other;
`check serve` refuses a draft whose weights and config.json disagree on it."""

import json
import shutil

from safetensors.torch import load_file

from eval.checks.draft_check import check_draft
from eval.checks.serve_check import check_serve
from pipeline.train.loop import run_train
from tests.eval.checks.test_draft_checks import CLEAN
from tests.kits.draft_toy import plain_config


def test_a_wider_draft_trains_exports_its_width_and_passes_the_engines_checks(toy, tmp_path):
    base = json.loads((toy.draft / "config.json").read_text())["intermediate_size"]
    wide = 3 * base
    out = tmp_path / "wide"
    run_train(
        plain_config(
            capture_dir=toy.capture,
            out_dir=out,
            batch_tokens=512,
            ttt_steps=2,
            max_steps=3,
            device="cpu",
            draft_intermediate_size=wide,
        )  # fmt: skip
    )
    cfg = json.loads((out / "config.json").read_text())
    weights = load_file(str(out / "model.safetensors"))
    assert cfg["intermediate_size"] == wide
    mlp = {k: list(v.shape) for k, v in weights.items() if ".mlp." in k}
    hidden = cfg["hidden_size"]
    assert sorted(mlp.values()) == sorted([[wide, hidden], [wide, hidden], [hidden, wide]]), mlp
    command = CLEAN.format(model=toy.model, draft=out)
    assert "weights.mlp_shape" not in {f.rule for f in check_serve(out, command).findings}
    replay = check_draft(out, toy.capture)  # the replay builds the draft from config.json: the width loads
    assert replay.wirings and replay.wirings[0].accept_length >= 1.0

    # the config claims the target's width while the weights are wider: the engine's load would fail
    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    (bad / "config.json").write_text(json.dumps({**cfg, "intermediate_size": base}))
    found = [f for f in check_serve(bad, command).findings if f.rule == "weights.mlp_shape"]
    assert found and found[0].severity == "error"
    assert f"is [{wide}, {hidden}], config.json says [{base}, {hidden}]" in found[0].problem


def test_packed_integer_mlp_weights_are_not_judged_by_shape(tmp_path):
    """A quantized checkpoint packs several 4-bit weights a byte (uint8 [I, H/2]): its shape is not the layer's, and
    a draft whose config.json is right must not be refused for it. A float weight of the wrong width still is."""
    from eval.checks.serve_context import Draft
    from eval.checks.serve_draft_rules import mlp_shape

    cfg = {"intermediate_size": 64, "hidden_size": 16}
    packed = {"midlayer.mlp.gate_proj.weight": ("U8", [64, 8]), "midlayer.mlp.down_proj.weight": ("U8", [16, 32])}
    assert not list(mlp_shape(Draft(tmp_path, cfg, None, packed, None, None), "src"))
    wrong = {"midlayer.mlp.gate_proj.weight": ("BF16", [32, 16])}
    found = list(mlp_shape(Draft(tmp_path, cfg, None, wrong, None, None), "src"))
    assert [f.rule for f in found] == ["weights.mlp_shape"] and "[32, 16], config.json says [64, 16]" in found[
        0
    ].problem


def test_left_out_the_draft_is_as_wide_as_the_target(toy):
    from pipeline.train.draft_arch import draft_config_for

    target = json.loads((toy.model / "config.json").read_text())
    assert draft_config_for(target, "auto", 3, 16, 64).intermediate_size == target["intermediate_size"]
    assert draft_config_for(target, "auto", 3, 16, 64, intermediate_size=7).intermediate_size == 7
