"""Exported-draft directories and target config.json files for the `check serve` corpus, built in
milliseconds without torch: the check reads config.json, the safetensors header, d2t/t2d and the
capture manifest, never the weights' values. Shapes follow draftset export (midlayer.* keys).

Targets are shaped like the real ones (no weights): a Llama target (LlamaForCausalLM, 8 layers),
Kimi-K2.5 (KimiK25ForConditionalGeneration, 61 layers in text_config, SGLang's DeepSeek-V3 path),
Kimi-K2 (DeepseekV3ForCausalLM), DeepSeek-V3 (MLA fields), a Llama with a 131072 context, GPT-OSS (24
layers) and Mixtral (no EAGLE3 capture in SGLang).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from pipeline.capture.layers import sglang_tap_rule, written_ids
from pipeline.capture.manifest import model_revision

H, K, V = 16, 32, 64  # draft hidden, draft vocab, target vocab
TARGETS: dict[str, dict] = {
    "llama": {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 8},
    "kimi-k25": {
        "architectures": ["KimiK25ForConditionalGeneration"],
        "model_type": "kimi_k25",
        "text_config": {"model_type": "kimi_k2", "num_hidden_layers": 61},
    },
    "kimi-k2": {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2", "num_hidden_layers": 61},
    "gpt-oss": {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "num_hidden_layers": 24},
    "llama-long": {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "num_hidden_layers": 8,
        "max_position_embeddings": 131072,
    },
    "deepseek-v3": {
        "architectures": ["DeepseekV3ForCausalLM"],
        "model_type": "deepseek_v3",
        "num_hidden_layers": 61,
        "kv_lora_rank": 512,
        "q_lora_rank": 1536,
        "qk_rope_head_dim": 64,
    },
    "mixtral": {"architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "num_hidden_layers": 32},
}


GQA_ATTENTION = [
    ("self_attn.q_proj.weight", (16, 2 * H)),
    ("self_attn.k_proj.weight", (16, 2 * H)),
    ("self_attn.v_proj.weight", (16, 2 * H)),
    ("self_attn.o_proj.weight", (H, 16)),
]
# deepseek_eagle3.py's layer 0 (q_lora_rank 8, kv_lora_rank 8, rope 4, nope 4, v 4, 2 heads): 2H in
MLA_ATTENTION = [
    ("self_attn.q_a_proj.weight", (8, 2 * H)),
    ("self_attn.q_a_layernorm.weight", (8,)),
    ("self_attn.q_b_proj.weight", (2 * 8, 8)),
    ("self_attn.kv_a_proj_with_mqa.weight", (8 + 4, 2 * H)),
    ("self_attn.kv_a_layernorm.weight", (8,)),
    ("self_attn.kv_b_proj.weight", (2 * 8, 8)),
    ("self_attn.o_proj.weight", (H, 2 * 4)),
]
MLA_DRAFT_CONFIG = {
    "architectures": ["Eagle3DeepseekV2ForCausalLM"],
    "model_type": "deepseek_v3",
    "q_lora_rank": 8,
    "kv_lora_rank": 8,
    "qk_rope_head_dim": 4,
    "qk_nope_head_dim": 4,
    "v_head_dim": 4,
}


def make_target(root: Path, name: str) -> Path:
    d = Path(root) / f"target-{name}"
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps({**TARGETS[name], "hidden_size": H, "vocab_size": V}))
    return d


def make_draft(
    root: Path,
    name: str,
    target: str = "llama",
    taps: list[int] | None = None,
    ttt: int = 3,
    written: list[int] | None = None,
    key_prefix: str = "midlayer.",
    d2t_dtype: type[np.integer] = np.int64,
    shuffle_d2t: bool = False,
    t2d_off: bool = False,
    extra_key: str | None = None,
    top: list[int] | None = None,
    longest_row: int | None = None,
    config_edit: dict | None = None,
    mla: bool = False,
    rope_theta: float = 10000.0,  # as trained and as written (config_edit changes only what is written)
) -> Path:
    """A draft exported for `target` (its written SGLang ids from the one layer rule unless `written`)."""
    tdir = make_target(root, target)
    cfg_t = TARGETS[target]
    n = cfg_t.get("num_hidden_layers") or cfg_t["text_config"]["num_hidden_layers"]
    taps = taps or [2, n // 2, n - 3]
    rule = sglang_tap_rule(cfg_t)
    if written is None:
        written = written_ids(rule if rule.name != "none" else rule.model_copy(update={"name": "plus_one"}), taps)
    d = Path(root) / name
    d.mkdir(parents=True, exist_ok=True)
    cfg = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": H,
        "target_hidden_size": H,
        "intermediate_size": 32,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "head_dim": 8,
        "num_hidden_layers": 1,
        "hidden_act": "silu",
        "rms_norm_eps": 1e-6,
        "rope_theta": rope_theta,
        "max_position_embeddings": 256,
        "rope_scaling": None,
        "vocab_size": V,
        "draft_vocab_size": K,
        "tie_word_embeddings": False,
        "bias": False,
        "torch_dtype": "bfloat16",
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": written, "use_aux_hidden_state": True},
        "eagle_aux_hidden_state_layer_ids": top if top is not None else taps,
        "draftset": {
            "hf_hidden_state_ids": taps,
            "n_target_layers": n,
            "ttt_steps": ttt,
            "max_length": 256,
            "target_architecture": cfg_t["architectures"][0],
            "sglang_tap_rule": rule.name,
            "longest_training_row": longest_row,
            "rope": {"rope_theta": rope_theta, "rope_scaling": None},
        },
        **(MLA_DRAFT_CONFIG if mla else {}),
        **(config_edit or {}),
    }
    (d / "config.json").write_text(json.dumps(cfg))
    f = np.float32
    attention = MLA_ATTENTION if mla else GQA_ATTENTION
    w = {
        f"{key_prefix}{p}": np.zeros(s, f)
        for p, s in [
            *attention,
            ("mlp.gate_proj.weight", (32, H)),
            ("mlp.up_proj.weight", (32, H)),
            ("mlp.down_proj.weight", (H, 32)),
            ("input_layernorm.weight", (H,)),
            ("post_attention_layernorm.weight", (H,)),
            ("hidden_norm.weight", (H,)),
        ]
    }
    hot = np.arange(0, 2 * K, 2)
    if shuffle_d2t:
        hot[[3, 4]] = hot[[4, 3]]
    t2d = np.zeros(V, bool)
    t2d[hot] = True
    if t2d_off:
        t2d[1] = True
    w.update(
        {
            "fc.weight": np.zeros((H, H * len(taps)), f),
            "norm.weight": np.zeros(H, f),
            "lm_head.weight": np.zeros((K, H), f),
            "d2t": (hot - np.arange(K)).astype(np.dtype(d2t_dtype)),
            "t2d": t2d,
        }
    )
    if extra_key:
        w[extra_key] = np.zeros(H, f)
    save_file(w, str(d / "model.safetensors"))
    (d / "capture_manifest.json").write_text(json.dumps(_manifest(tdir, cfg_t, n, taps)))
    return d


def materialize(root: Path, name: str, variant: dict, template: str) -> tuple[Path, Path, str]:
    """(draft, target dir, command) for one corpus case; a `yaml` entry becomes the --config file {config}."""
    variant = dict(variant)
    config = variant.pop("yaml", None)
    draft = make_draft(root, name, **variant)
    model = make_target(root, variant.get("target", "llama"))
    command = template.replace("{model}", str(model)).replace("{draft}", str(draft))
    if config is not None:
        path = Path(root) / f"{name}.yaml"
        path.write_text(json.dumps(config).replace("{draft}", str(draft)))  # JSON is YAML
        command = command.replace("{config}", str(path))
    return draft, model, command


def _manifest(tdir: Path, cfg_t: dict, n: int, taps: list[int]) -> dict:
    return {
        "model_dir": str(tdir),
        "model_id": tdir.name,
        "model_revision": model_revision(tdir),
        "model_type": cfg_t["model_type"],
        "n_layers": n,
        "hidden_size": H,
        "vocab_size": V,
        "rms_norm_eps": 1e-6,
        "taps": {"aux": taps, "vllm_ids": taps},
        "hidden_bytes_per_token": (len(taps) + 1) * H * 2,
        "chat_template_sha256": None,
        "system_prompt": None,
        "thinking": None,
        "max_length": 256,
        "draft_vocab_size": K,
        "build_dir": "synthetic",
    }
