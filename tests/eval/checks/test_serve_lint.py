"""`check serve` against the launch-command corpus and the per-architecture layer rule.

Synthetic drafts (eval/bench/serve_drafts.py: config.json, safetensors header-sized tensors, manifest)
keep these fast; tests/eval/checks/test_draft_checks.py runs the same checks on a really trained draft.
"""

import json
import re
import sys
from pathlib import Path

import pytest

from catalog.errors import DraftsetError
from eval.bench.serve_corpus import CASES, GOOD
from eval.bench.serve_drafts import TARGETS, make_draft, make_target, materialize
from eval.checks.serve_check import check_serve
from eval.checks.sglang_args import LaunchCommand
from pipeline.capture.layers import engine_captures, sglang_tap_rule, written_ids
from pipeline.capture.manifest import CaptureManifest
from pipeline.train.export import draft_config_json

ROOT = Path(__file__).resolve().parents[3]


def _run(tmp_path, variant, template):
    draft, model, command = materialize(tmp_path, "draft", variant, template)
    return draft, model, check_serve(draft, command)


@pytest.mark.parametrize("kind,variant,template,verdict,rules", CASES, ids=[c[0] for c in CASES])
def test_corpus_case(tmp_path, kind, variant, template, verdict, rules):
    _, _, r = _run(tmp_path, variant, template)
    found = {f.rule for f in r.findings}
    assert r.verdict == verdict and rules <= found, [(f.rule, f.problem) for f in r.findings]
    if verdict == "clean":
        assert not r.findings  # no false alarm, not even a warning
    for f in r.findings:
        assert f.source and f.fix and f.rule  # every finding names its engine source and fix


def test_every_rule_has_a_planted_case_and_a_readme_row():
    emitted = set()
    for path in (ROOT / "eval" / "checks").glob("*.py"):
        emitted |= set(re.findall(r'Finding\(\s*"([a-z0-9_.]+)"', path.read_text()))
    planted = set().union(*(rules for *_, rules in CASES))
    readme = (ROOT / "README.md").read_text()
    untested = (
        emitted
        - planted
        - {
            "sglang.args.native_disagrees",
            "sglang.args.help",
            "serve.target_model",
            "serve.chat_template",
            "serve.system_prompt",
            "serve.thinking",
            "serve.context_length",
            "sglang.layers.no_aux",
            "weights.sglang.fc_shape",
            "weights.mlp_shape",  # tests/pipeline/train/test_draft_width.py, on a really trained wider draft
            "weights.vllm.refused",
            "vllm.args.speculative_config",
            "vllm.tokens.invalid",
            "vllm.draft.path",
            "sglang.chain.tree_size",
        }
    )
    assert not untested, f"rules without a planted corpus case: {untested}"
    assert not [r for r in emitted if f"`{r}`" not in readme], "README rule table is missing rules"


@pytest.mark.parametrize(
    "variant,template,rule",
    [
        ({}, GOOD + " -h", "sglang.args.help"),
        (
            {},
            GOOD.replace(" --speculative-num-draft-tokens 4", "") + " --speculative-eagle-topk 4",
            "sglang.chain.tree_size",
        ),
        ({}, GOOD + " --context-length 999", "serve.context_length"),
        (
            {"top": None},
            (
                'vllm serve {model} --speculative-config \'{"method": "eagle3", "model": "/x", '
                '"num_speculative_tokens": 3}\''
            ),
            "vllm.draft.path",
        ),
        ({}, "vllm serve {model} --speculative-config '{not json'", "vllm.args.speculative_config"),
        (
            {},
            (
                'vllm serve {model} --speculative-config \'{"method": "eagle3", "model": "{draft}", '
                '"num_speculative_tokens": 0}\''
            ),
            "vllm.tokens.invalid",
        ),
        (
            {"key_prefix": "decoder.0."},
            (
                'vllm serve {model} --speculative-config \'{"method": "eagle3", '
                '"model": "{draft}", "num_speculative_tokens": 3}\''
            ),
            "weights.vllm.refused",
        ),
    ],
)
def test_more_planted_rules(tmp_path, variant, template, rule):
    _, _, r = _run(tmp_path, variant, template)
    assert rule in {f.rule for f in r.findings}, [(f.rule, f.problem) for f in r.findings]


def test_fc_shape_and_use_aux(tmp_path):
    draft = make_draft(tmp_path, "d")
    cfg = json.loads((draft / "config.json").read_text())
    cfg["eagle_config"] = {"use_aux_hidden_state": False}
    (draft / "config.json").write_text(json.dumps(cfg))
    model = make_target(tmp_path, "llama")
    rules = {f.rule for f in check_serve(draft, GOOD.format(model=model, draft=draft)).findings}
    assert {"sglang.layers.no_aux"} <= rules
    cfg["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": [1, 3], "use_aux_hidden_state": True}
    (draft / "config.json").write_text(json.dumps(cfg))
    rules = {f.rule for f in check_serve(draft, GOOD.format(model=model, draft=draft)).findings}
    assert {"weights.sglang.fc_shape", "sglang.layers.mismatch"} <= rules


@pytest.mark.parametrize(
    "target,taps,written,captured",
    [
        ("kimi-k25", [2, 30, 58], [1, 29, 57], [2, 30, 58]),  # first id 1: DeepSeek-V3 path adds +1
        ("kimi-k25", [3, 31, 59], [3, 31, 59], [3, 31, 59]),  # otherwise it uses the ids as given
        ("kimi-k2", [4, 30, 57], [4, 30, 57], [4, 30, 57]),
        ("llama", [2, 4, 5], [1, 3, 4], [2, 4, 5]),  # Llama path: always +1
        ("llama", [3, 4, 6], [2, 3, 5], [3, 4, 6]),
        ("gpt-oss", [2, 12, 24], [1, 11, 23], [2, 12, 24]),  # GPT-OSS: as given when max is n, else +1
    ],
)
def test_written_ids_read_back_as_trained(target, taps, written, captured):
    rule = sglang_tap_rule(TARGETS[target])
    assert written_ids(rule, taps) == written
    assert engine_captures(rule, written)[0] == captured


def test_kimi_mismatch_of_the_issue_and_inexpressible_taps():
    kimi = sglang_tap_rule(TARGETS["kimi-k25"])
    assert kimi.name == "first_is_one" and "deepseek_v2.py" in kimi.source and kimi.n_layers == 61
    assert engine_captures(kimi, [2, 30, 58])[0] == [2, 30, 58]  # j-1 of [3,31,59]: one layer early
    with pytest.raises(DraftsetError, match="cannot capture"):
        written_ids(kimi, [1, 30, 58])  # [0,..] as given, [1,..] shifted: neither
    with pytest.raises(DraftsetError, match="cannot capture"):
        written_ids(sglang_tap_rule(TARGETS["llama"]), [2, 4, 8])  # HF n is never captured on Llama
    assert sglang_tap_rule(TARGETS["mixtral"]).name == "none"


def _manifest(target_dir: Path, cfg: dict, taps: list[int]) -> CaptureManifest:
    n = cfg.get("num_hidden_layers") or cfg["text_config"]["num_hidden_layers"]
    return CaptureManifest.model_validate(
        {
            "model_dir": str(target_dir),
            "model_id": "t",
            "model_revision": "r",
            "model_type": cfg["model_type"],
            "n_layers": n,
            "hidden_size": 16,
            "vocab_size": 64,
            "rms_norm_eps": 1e-6,
            "taps": {"aux": taps, "vllm_ids": taps},
            "hidden_bytes_per_token": 128,
            "chat_template_sha256": None,
            "system_prompt": None,
            "thinking": None,
            "max_length": 64,
            "draft_vocab_size": 32,
            "build_dir": "b",
        }
    )


DRAFT = {
    k: 1
    for k in (
        "hidden_size",
        "target_hidden_size",
        "intermediate_size",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "rms_norm_eps",
        "rope_theta",
        "max_position_embeddings",
        "vocab_size",
        "draft_vocab_size",
    )
}


@pytest.mark.parametrize(
    "target,taps,sglang",
    [("kimi-k25", [3, 31, 59], [3, 31, 59]), ("kimi-k25", [2, 30, 58], [1, 29, 57]), ("llama", [3, 4, 6], [2, 3, 5])],
)
def test_export_writes_ids_for_the_targets_architecture(tmp_path, target, taps, sglang):
    tdir = make_target(tmp_path, target)
    cfg = draft_config_json(DRAFT, _manifest(tdir, TARGETS[target], taps), {"ttt_steps": 3, "heldout_every": 20})
    assert cfg["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == sglang
    assert cfg["eagle_aux_hidden_state_layer_ids"] == taps  # vLLM: as given
    assert cfg["draftset"]["target_architecture"] == TARGETS[target]["architectures"][0]


def test_export_refuses_taps_the_engine_cannot_express(tmp_path):
    tdir = make_target(tmp_path, "kimi-k25")
    with pytest.raises(DraftsetError, match="cannot capture"):
        draft_config_json(
            DRAFT, _manifest(tdir, TARGETS["kimi-k25"], [1, 30, 58]), {"ttt_steps": 3, "heldout_every": 20}
        )


def test_corrected_commands_are_clean(tmp_path):
    draft = make_draft(tmp_path, "d")
    model = make_target(tmp_path, "llama")
    good = GOOD.format(model=model, draft=draft)
    for bad in (
        good.replace("--speculative-draft-model-path", "--speculative-draft"),
        good.replace("--speculative-algorithm EAGLE3", "--speculative-algoritm EAGLE"),
        good.replace("--speculative-num-steps 3", "--speculative-num-steps 1").replace(
            "--speculative-num-draft-tokens 4", "--speculative-num-draft-tokens 16"
        ),
        good.replace(" --speculative-eagle-topk 1", "").replace(" --speculative-num-draft-tokens 4", ""),
        good.replace("--speculative-num-steps 3 ", ""),
    ):
        r = check_serve(draft, bad)
        assert not r.clean
        assert check_serve(draft, r.corrected()).clean, (bad, r.corrected())


def test_sglang_serve_positional_model_is_rewritten_in_place():
    cmd = LaunchCommand.parse("sglang serve /m --speculative-algo EAGLE --speculative-num-steps=3")
    assert cmd.positional_model and cmd.get("model_path") == "/m"
    out = cmd.with_changes(
        {"speculative_algorithm": "EAGLE3", "speculative_num_steps": "4", "speculative_eagle_topk": "1"}
    ).render()
    assert out == "sglang serve /m --speculative-algo EAGLE3 --speculative-num-steps=4 --speculative-eagle-topk 1"


def test_check_serve_json_cli(tmp_path, home):
    pytest.importorskip("langgraph", reason="the full CLI needs the find stack (absent on GPU hosts)")
    from typer.testing import CliRunner

    from pipeline.cli.app import app

    draft = make_draft(tmp_path, "d", target="kimi-k25", taps=[3, 31, 59], written=[2, 30, 58])
    model = make_target(tmp_path, "kimi-k25")
    bad = CliRunner().invoke(
        app,
        [
            "check",
            "serve",
            str(draft),
            "--json",
            "--",
            *GOOD.format(model=model, draft=draft).replace("EAGLE3", "eagle").split(),
        ],
    )
    assert bad.exit_code == 1
    report = json.loads(bad.output)
    rules = {f["rule"]: f for f in report["findings"]}
    # Kimi-K2.5 is MLA-shaped: the Llama-style draft also gets the (warning) architecture note
    assert set(rules) == {"sglang.algorithm.not_eagle3", "sglang.layers.mismatch", "serve.draft_architecture"}
    assert all({"rule", "severity", "flag", "problem", "why", "fix", "source"} <= set(f) for f in report["findings"])
    assert (
        "deepseek_v2.py" in rules["sglang.layers.mismatch"]["source"] and "first_is_one" in report["rules_applied"][0]
    )
    assert "--speculative-algorithm EAGLE3" in report["corrected_command"]
    ok = CliRunner().invoke(
        app,
        [
            "check",
            "serve",
            str(draft),
            "--target-config",
            str(model / "config.json"),
            "--",
            "sglang",
            "serve",
            "moonshotai/Kimi-K2.5",
            "--speculative-algorithm",
            "EAGLE3",
            "--speculative-draft-model-path",
            str(draft),
        ],
    )
    assert "first_is_one" in ok.output and "--target-config" in ok.output  # says which engine rule it applied


def test_native_parser_path_with_a_fake_minimal_sglang(tmp_path, monkeypatch):
    """FAKE minimal `sglang` package (labelled as such): only proves that an importable sglang's own parser is
    used and that a disagreement with the built-in table is reported; real SGLang is not installable here."""
    pkg = tmp_path / "fake" / "sglang" / "srt"
    pkg.mkdir(parents=True)
    (pkg.parent / "__init__.py").write_text("# FAKE minimal sglang for tests\n")
    (pkg / "__init__.py").write_text("")
    (pkg / "server_args.py").write_text(
        "# FAKE: a tiny ServerArgs whose parser lacks most flags\n"
        "class ServerArgs:\n"
        "    @staticmethod\n"
        "    def add_cli_args(p):\n"
        "        p.add_argument('--model-path', '--model', dest='model_path', required=True)\n"
        "        p.add_argument('--speculative-algorithm', dest='speculative_algorithm')\n"
        "        p.add_argument('--speculative-draft-model-path', dest='speculative_draft_model_path')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "fake"))
    for name in [m for m in sys.modules if m == "sglang" or m.startswith("sglang.")]:
        monkeypatch.delitem(sys.modules, name)
    draft = make_draft(tmp_path, "d")
    model = make_target(tmp_path, "llama")
    r = check_serve(draft, GOOD.format(model=model, draft=draft))
    assert "installed sglang" in r.parser
    [f] = [f for f in r.findings if f.rule == "sglang.args.native_disagrees"]
    assert "unrecognized arguments" in f.problem  # the fake parser rejects --speculative-num-steps
