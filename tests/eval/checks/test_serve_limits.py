"""The draft's serving limits (trained context, RoPE) and the MLA-target architecture note in `check serve`."""

import json

import pytest

from eval.bench.serve_drafts import materialize
from eval.checks.serve_arch import is_mla_target
from eval.checks.serve_check import check_serve
from eval.checks.serve_limits import derived_context, vllm_max_model_len
from pipeline.capture.manifest import CaptureManifest
from pipeline.capture.store import CaptureReader

SG = (
    "python -m sglang.launch_server --model-path {model} --speculative-algorithm EAGLE3 "
    "--speculative-draft-model-path {draft} --speculative-num-steps 3 --speculative-eagle-topk 1 "
    "--speculative-num-draft-tokens 4"
)


def rules(report) -> set[str]:
    return {f.rule for f in report.findings}


def test_export_records_the_trained_context_and_rope(toy):
    cfg = json.loads((toy.draft / "config.json").read_text())
    lengths = {int(s["loss_mask"].numel()) for _, s in CaptureReader(toy.capture)}
    meta = cfg["draftset"]
    assert meta["longest_training_row"] in lengths  # a trained row's length (held-out rows are not trained)
    assert meta["longest_training_row"] <= meta["max_length"] == CaptureManifest.load(toy.capture).max_length
    assert cfg["rope_scaling"] is None and cfg["max_position_embeddings"] == meta["max_length"]
    assert meta["rope"] == {"rope_theta": cfg["rope_theta"], "rope_scaling": None}


def test_check_serve_on_the_exported_draft_warns_only_past_its_trained_context(toy):
    meta = json.loads((toy.draft / "config.json").read_text())["draftset"]
    limit = meta["max_length"]
    cmd = SG.format(model=toy.model, draft=toy.draft)
    assert "serve.context_length" not in rules(check_serve(toy.draft, f"{cmd} --context-length {limit}"))
    over = check_serve(toy.draft, f"{cmd} --context-length {limit + 1}")
    (f,) = [f for f in over.findings if f.rule == "serve.context_length"]
    assert f.severity == "warning" and f"--context-length {limit}" in f.fix and f"--max-length {limit + 1}" in f.fix
    assert f"longest training row {meta['longest_training_row']}" in f.problem
    assert f"--context-length {limit}" in (over.corrected() or "")
    assert "serve.draft_rope" not in rules(over)


@pytest.mark.parametrize(
    "config,expected",
    [
        ({"max_position_embeddings": 4096}, 4096),
        ({"max_position_embeddings": 4096, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, 16384),
        (
            {
                "max_position_embeddings": 131072,
                "rope_scaling": {"type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096},
            },
            131072,
        ),  # DeepSeek-V3 / Kimi: the positions are already the scaled ones
        ({"max_position_embeddings": 131072, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}}, 131072),
        ({"text_config": {"max_position_embeddings": 262144}, "max_position_embeddings": 1}, 262144),
        ({"seq_length": 8192, "max_position_embeddings": 2048}, 8192),  # first key in SGLang's order wins
        ({"architectures": ["LlamaForCausalLM"]}, None),
    ],
)
def test_derived_context_follows_sglang(config, expected):
    assert derived_context(config) == expected


@pytest.mark.parametrize(
    "tokens,expected",
    [
        (["vllm", "serve", "m", "--max-model-len", "8192"], 8192),
        (["vllm", "serve", "m", "--max_model_len=32k"], 32000),
        (["vllm", "serve", "m", "--max-model-len=1M"], 1_000_000),
        (["vllm", "serve", "m"], None),
    ],
)
def test_vllm_max_model_len_forms(tokens, expected):
    assert vllm_max_model_len(tokens)[0] == expected


def test_the_flag_wins_over_the_target_default_and_rope_edits_are_errors(tmp_path):
    draft, _, cmd = materialize(tmp_path, "a", {"target": "llama-long"}, SG)
    (f,) = [f for f in check_serve(draft, cmd).findings if f.rule == "serve.context_length"]
    assert "131072" in f.problem and "--max-length 131072" in f.fix
    assert "stops at startup" in f.why and "ValueError" in f.why  # the draft's max_position_embeddings is 256
    (g,) = [
        f
        for f in check_serve(draft, "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 " + cmd).findings
        if f.rule == "serve.context_length"
    ]
    assert g.severity == "warning" and "stops at startup" not in g.why and "lets SGLang start" in g.why
    assert check_serve(draft, cmd + " --context-length 256").clean
    yarn = {"rope_scaling": {"rope_type": "yarn", "factor": 32.0}}
    bad, _, cmd = materialize(tmp_path, "b", {"config_edit": yarn}, SG)
    assert {f.severity for f in check_serve(bad, cmd).findings if f.rule == "serve.draft_rope"} == {"error"}


def test_mla_target_note_fires_for_llama_drafts_only(tmp_path):
    assert is_mla_target({"model_type": "kimi_k25", "text_config": {"kv_lora_rank": 512}})
    assert is_mla_target({"architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2"})
    assert not is_mla_target({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "head_dim": 64})
    draft, _, cmd = materialize(tmp_path, "c", {"target": "deepseek-v3"}, SG)
    report = check_serve(draft, cmd)
    assert rules(report) == {"serve.draft_architecture"} and report.verdict == "warning"
    mla_cfg = {"architectures": ["Eagle3DeepseekV2ForCausalLM"]}
    mla, _, cmd = materialize(tmp_path, "d", {"target": "deepseek-v3", "config_edit": mla_cfg}, SG)
    assert "serve.draft_architecture" not in rules(check_serve(mla, cmd))
    llama, _, cmd = materialize(tmp_path, "e", {}, SG)
    assert "serve.draft_architecture" not in rules(check_serve(llama, cmd))
