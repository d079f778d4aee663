"""Will the engines load the draft's weights, all of them, and map its vocabulary right?

Key rules follow each engine's loader for `LlamaForCausalLMEagle3` drafts:
  SGLang 0.5.23  python/sglang/srt/models/llama_eagle3.py load_weights: `midlayer`/`aux_norm_*` renamed to
      `layers.0`/`fc_norm.*`, q/k/v and gate/up stacked, then `name` or `model.<name>` must be a parameter;
      any other name is skipped *silently* (that weight stays random). `d2t` becomes hot_token_id = d2t +
      arange(K) (so it must be an integer tensor); `t2d` is ignored.
  vLLM 0.33.0    vllm/model_executor/models/llama_eagle3.py: `d2t` -> draft_id_to_target_id (a long
      parameter), `t2d` dropped, `midlayer.` -> `layers.0.`; AutoWeightsLoader (models/utils.py) raises on
      any other unknown name except a `.bias` suffix.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import Any

SGLANG_LOADER = ("python/sglang/srt/models/llama_eagle3.py", "0.5.23")
VLLM_LOADER = ("vllm/model_executor/models/llama_eagle3.py", "0.33.0")
_LEGACY = {
    "midlayer": "layers.0",
    "aux_norm_low": "fc_norm.0",
    "aux_norm_mid": "fc_norm.1",
    "aux_norm_high": "fc_norm.2",
}
_STACKED = {
    ".q_proj": ".qkv_proj",
    ".k_proj": ".qkv_proj",
    ".v_proj": ".qkv_proj",
    ".gate_proj": ".gate_up_proj",
    ".up_proj": ".gate_up_proj",
}
_LAYER = (
    "self_attn.qkv_proj.weight",
    "self_attn.o_proj.weight",
    "mlp.gate_up_proj.weight",
    "mlp.down_proj.weight",
    "input_layernorm.weight",
    "post_attention_layernorm.weight",
    "hidden_norm.weight",
)


def _eagle(cfg: dict, key: str, default: Any = None) -> Any:
    return (cfg.get("eagle_config") or {}).get(key, cfg.get(key, default))


def engine_params(cfg: dict) -> tuple[set[str], set[str]]:
    """(every parameter the draft module has, those that must come from the checkpoint)."""
    layers = [f"model.layers.{i}.{p}" for i in range(int(cfg.get("num_hidden_layers", 1))) for p in _LAYER]
    if cfg.get("attention_bias"):
        layers += [f"model.layers.{i}.self_attn.qkv_proj.bias" for i in range(int(cfg.get("num_hidden_layers", 1)))]
    required = {*layers, "model.fc.weight", "model.norm.weight"}
    if cfg.get("bias"):
        required.add("model.fc.bias")
    if _eagle(cfg, "norm_before_fc", False):
        required.add("model.input_norm.weight")
    if cfg.get("fc_norm") or cfg.get("use_aux_norm"):
        ids = (cfg.get("eagle_config") or {}).get("eagle_aux_hidden_state_layer_ids")
        required |= {f"model.fc_norm.{k}.weight" for k in range(len(ids) if ids else 3)}
    if not cfg.get("tie_word_embeddings") and cfg.get("draft_vocab_size") is not None:
        required.add("lm_head.weight")  # with draft_vocab_size None SGLang takes the target's head instead
    optional = {"model.embed_tokens.weight"} | (set() if cfg.get("tie_word_embeddings") else {"lm_head.weight"})
    return required | optional, required


def sglang_name(name: str, params: set[str]) -> str | None:
    """The parameter SGLang loads `name` into, or None when it silently skips it."""
    for legacy, new in _LEGACY.items():
        if legacy in name:
            name = name.replace(legacy, new)
    for old, new in _STACKED.items():
        if old in name:
            name = name.replace(old, new)
            break
    for candidate in (name, f"model.{name}"):
        if candidate in params:
            return candidate
    return None


def vllm_name(name: str, params: set[str]) -> str | None:
    """The parameter vLLM loads `name` into, or None when AutoWeightsLoader would raise."""
    name = "model." + name if "lm_head" not in name else name
    name = name.replace("midlayer.", "layers.0.")
    for old, new in _STACKED.items():
        if old in name:
            name = name.replace(old, new)
            break
    return name if name in params or name.endswith(".bias") else None


@dataclass
class WeightReport:
    sglang_skipped: list[str]  # loaded by nobody in SGLang: silently random
    sglang_missing: list[str]  # parameters no checkpoint key fills (random at serving)
    vllm_refused: list[str]  # vLLM stops at load
    vocab: list[str]  # d2t/t2d problems (empty = fine)


def check_weights(
    cfg: dict,
    tensors: dict[str, tuple[str, list[int]]],
    d2t: list[int] | None = None,
    t2d: list[bool] | None = None,
    target_vocab: int | None = None,
) -> WeightReport:
    """`tensors`: name -> (safetensors dtype, shape); `d2t`/`t2d`: their values when integer/bool."""
    params, required = engine_params(cfg)
    names = [k for k in tensors if "d2t" not in k and "t2d" not in k]
    loaded = {sglang_name(k, params) for k in names}
    skipped = sorted(k for k in names if sglang_name(k, params) is None)
    missing = sorted(p for p in required if p not in loaded)
    refused = sorted(k for k in names if vllm_name(k, params) is None)
    return WeightReport(skipped, missing, refused, vocab_problems(cfg, tensors, d2t, t2d, target_vocab))


def vocab_problems(
    cfg: dict, tensors: dict, d2t: list[int] | None, t2d: list[bool] | None, target_vocab: int | None
) -> list[str]:
    k, v = cfg.get("draft_vocab_size"), target_vocab or cfg.get("vocab_size")
    key = next((n for n in tensors if "d2t" in n), None)
    out = []
    if key is None:
        if k is not None and v is not None and k != v:
            out.append(
                f"no d2t tensor although draft_vocab_size {k} != target vocab {v}: SGLang has no hot-token map "
                "and vLLM keeps draft_id_to_target_id at zeros, so every draft token maps to the wrong id"
            )
        return out
    dtype, shape = tensors[key]
    if dtype not in ("I64",):
        out.append(
            f"{key} is {dtype}, not int64: SGLang computes hot_token_id = d2t + arange(K) and indexes with it, "
            "vLLM copies it into a long parameter (float offsets above 256 are not exact in bf16)"
        )
    if shape != [k]:
        out.append(f"{key} has shape {shape}, draft_vocab_size is {k}")
    if d2t is not None and dtype == "I64":
        hot = [int(x) + i for i, x in enumerate(d2t)]
        if any(b <= a for a, b in pairwise(hot)):
            out.append(
                f"{key}: hot ids d + d2t[d] are not strictly increasing (the draft vocabulary is the sorted "
                "top-K target ids; a permuted map scores the wrong tokens)"
            )
        if v is not None and hot and (min(hot) < 0 or max(hot) >= v):
            out.append(f"{key}: hot ids leave 0..{v - 1}")
        if t2d is not None:
            chosen = {i for i, flag in enumerate(t2d) if flag}
            if len(t2d) != v:
                out.append(f"t2d has {len(t2d)} entries, target vocab is {v}")
            elif chosen != set(hot):
                out.append(
                    f"t2d marks {len(chosen)} target ids, d2t maps to {len(set(hot))}; {len(chosen ^ set(hot))} differ"
                )
    t2d_key = next((n for n in tensors if "t2d" in n), None)
    if t2d_key is not None and tensors[t2d_key][0] != "BOOL":
        out.append(f"{t2d_key} is {tensors[t2d_key][0]}, not bool")
    return out
