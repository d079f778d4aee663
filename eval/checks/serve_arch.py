"""Which draft architecture the target's engines expect, against the one the draft names.

draftset trains two draft layouts (pipeline/train/draft_arch.py picks one by the target): a Llama-style EAGLE-3
layer (`LlamaForCausalLMEagle3`: q/k/v_proj GQA attention) and, for DeepSeek-V3-shaped targets (DeepSeek-V2/V3,
Kimi-K2/K2.5: MLA attention, config.json names kv_lora_rank / q_lora_rank / qk_rope_head_dim), the MLA layer of
the engines' MLA draft path, which the public Kimi-K2.6/K2.7 drafts use:
  vLLM  vllm/model_executor/models/deepseek_eagle3.py (vllm-project/vllm @ 0c838b5a):
        `Eagle3DeepseekV2ForCausalLM` (alias Eagle3DeepseekV3ForCausalLM), one DeepseekV2MLAAttention
        layer over [embed; hidden] (2H in) with a dense MLP; reads qk_nope_head_dim, qk_rope_head_dim,
        v_head_dim, kv_lora_rank, q_lora_rank, rope_scaling (as deepseek_yarn) from the draft config;
        weights midlayer.* -> layers.0.*, q_a_proj + kv_a_proj_with_mqa fused, d2t -> draft_id_to_target_id.
  SGLang python/sglang/srt/models/deepseek_eagle3.py (sgl-project/sglang @ 76066f8f): `Eagle3DeepseekV3ForCausalLM`,
        the same layer (fused_qkv_a_proj_with_mqa of 2H in when q_lora_rank is set), num_hidden_layers must be 1;
        newer SGLang registers `Eagle3DeepseekV2ForCausalLM` (deepseek_eagle3.py @ 5da6caea, kimi_k25_eagle3.py).
A Llama-style draft (forced with `train --draft-arch llama`) still loads and runs on these targets (its own small
KV cache beside the target's MLA cache), so this is a warning: the user should know it is not the layout the
field's Kimi drafts use.
"""

from __future__ import annotations

from collections.abc import Iterator

from eval.checks.serve_context import Draft, Finding
from pipeline.train.draft_arch import is_mla_target  # one rule for both: the architecture train picks, and this

__all__ = ["is_mla_target"]

MLA_DRAFTS = (
    "Eagle3DeepseekV2ForCausalLM",
    "Eagle3DeepseekV3ForCausalLM",
    "DeepseekV2ForCausalLMEagle3",
    "DeepseekV3ForCausalLMEagle3",
)
VLLM_SRC = "vllm/model_executor/models/deepseek_eagle3.py (vllm-project/vllm @ 0c838b5a)"
SGLANG_SRC = "python/sglang/srt/models/deepseek_eagle3.py (sgl-project/sglang @ 76066f8f)"


def names_mla_class(draft: Draft) -> bool:
    """The engine builds what config.json's architectures names: this decides which loader reads the keys."""
    return any(a in MLA_DRAFTS for a in draft.cfg.get("architectures") or [])


def is_mla_draft(draft: Draft) -> bool:
    return names_mla_class(draft) or any("kv_a_proj_with_mqa" in k for k in draft.tensors)


def draft_architecture(draft: Draft, target: dict, engine: str) -> Iterator[Finding]:
    if not is_mla_target(target) or is_mla_draft(draft):
        return
    arch = (draft.cfg.get("architectures") or ["LlamaForCausalLMEagle3"])[0]
    mla = (
        "Eagle3DeepseekV2ForCausalLM"
        if engine == "vllm"
        else "Eagle3DeepseekV2ForCausalLM; Eagle3DeepseekV3ForCausalLM in SGLang @ 76066f8f"
    )
    yield Finding(
        "serve.draft_architecture",
        "warning",
        "draft config.json architectures",
        f"the target is DeepSeek-V3-shaped (MLA attention), the draft is a Llama-style EAGLE-3 layer ({arch}); "
        f"the engine's MLA draft path ({mla}, as the public Kimi-K2.6/K2.7 drafts use) is not this draft",
        "it loads and serves (its own GQA KV cache beside the target's MLA cache), but it is not the layout the "
        "field's Kimi/DeepSeek drafts are tuned and benchmarked with; published accept lengths for MLA drafts "
        "do not carry over",
        "retrain with `draftset train --draft-arch mla` (what --draft-arch auto gives this target), or accept it "
        "knowingly (measure it: `draftset check accept-length`)",
        VLLM_SRC if engine == "vllm" else SGLANG_SRC,
    )
