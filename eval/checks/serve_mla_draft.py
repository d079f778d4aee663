"""A draft that names the engines' MLA draft class: what their loaders read (config fields, weight keys).

draftset trains this draft for DeepSeek-V3-shaped targets (pipeline/train/draft_mla.py, exported as
`Eagle3DeepseekV2ForCausalLM`); these rules vet it, or one brought from elsewhere (e.g. a public Kimi draft),
instead of judging it by the Llama draft's key table. Followed:
  SGLang python/sglang/srt/models/deepseek_eagle3.py (sgl-project/sglang @ 76066f8f): the layer reads
      config.qk_nope_head_dim, qk_rope_head_dim, v_head_dim, kv_lora_rank, max_position_embeddings
      directly (absent: AttributeError at startup; q_lora_rank is optional there); `num_hidden_layers != 1`
      raises ValueError; the module is `model.midlayer`, so checkpoint names `midlayer.*` load as they are
      (later versions, @ 5da6caea and kimi_k25_eagle3.py @ 054a1cef, also map `layers.0.` to `midlayer.`);
      names that are not parameters are skipped, silently. kimi_k25_eagle3.py, which registers
      Eagle3DeepseekV2ForCausalLM in newer SGLang, raises ValueError when the config has no q_lora_rank.
  vLLM  vllm/model_executor/models/deepseek_eagle3.py (vllm-project/vllm @ 0c838b5a): the same fields via
      getattr with 0 defaults (a zero-width MLA), several layers allowed; midlayer. -> layers.0.;
      DeepseekV2Eagle3Model.load_weights also `continue`s past unknown names, silently. Its layer rebuilds the
      rope parameters from rope_scaling alone: with none set, get_rope's default base 10000 applies, not the
      config's rope_theta (transformers 4 configs).
Only the attention differs from the Llama draft: MLA projections (kv_a_proj_with_mqa, kv_b_proj, o_proj,
q_a_proj/q_b_proj or q_proj) instead of q/k/v_proj; fc, norm, lm_head, d2t and the MLP are shared.
"""

from __future__ import annotations

from collections.abc import Iterator

from eval.checks.serve_arch import SGLANG_SRC, VLLM_SRC, names_mla_class
from eval.checks.serve_context import Draft, Finding
from pipeline.train.draft_mla import ENGINE_ROPE_THETA

SGLANG_KIMI_SRC = "python/sglang/srt/models/kimi_k25_eagle3.py (sgl-project/sglang @ 054a1cef)"

MLA_CONFIG = ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "kv_lora_rank", "max_position_embeddings")
MLA_ATTENTION = (("kv_a_proj_with_mqa", "fused_qkv_a_proj_with_mqa"), ("kv_b_proj",), ("o_proj",))
LLAMA_KEY_RULES = ("weights.sglang.not_loaded", "weights.vllm.refused")  # mirror llama_eagle3.py, not this loader


def mla_draft_rules(draft: Draft, engine: str) -> Iterator[Finding]:
    if not names_mla_class(draft):
        return
    src = SGLANG_SRC if engine == "sglang" else VLLM_SRC
    missing = [k for k in MLA_CONFIG if draft.cfg.get(k) is None]
    if missing:
        yield Finding(
            "mla.config.missing",
            "error",
            "draft config.json",
            f"an MLA draft config without {missing}",
            "SGLang reads them as attributes (AttributeError at startup); vLLM defaults them to 0 (a zero-width "
            "attention that cannot hold the trained weights)",
            "copy the MLA fields the draft was trained with into its config.json",
            src,
        )
    layers = int(draft.cfg.get("num_hidden_layers", 1))
    if engine == "sglang" and layers != 1:
        yield Finding(
            "mla.layers.count",
            "error",
            "draft config.json num_hidden_layers",
            f"num_hidden_layers = {layers}",
            "SGLang's MLA EAGLE-3 draft raises ValueError('Eagle3 currently only supports 1 layer')",
            "serve a one-layer draft, or serve this one with vLLM (it builds several layers)",
            src,
        )
    if engine == "sglang" and not missing:
        yield from sglang_version_limits(draft)
    theta = draft.cfg.get("rope_theta")
    if engine == "vllm" and not draft.cfg.get("rope_scaling") and theta is not None and theta != ENGINE_ROPE_THETA:
        yield Finding(
            "mla.rope.vllm_base",
            "warning",
            "draft config.json rope_theta",
            f"an MLA draft with rope_theta {theta} and no rope_scaling",
            "vLLM's Eagle3 DeepseekV2 layer sets its rope parameters to {'rope_type': 'default'} when rope_scaling "
            f"is unset, so get_rope rotates with base {ENGINE_ROPE_THETA:g}, not {theta}: positions the draft did "
            "not learn (with transformers 4 configs; transformers 5 passes rope_theta through)",
            f"measure it on this vLLM (`draftset check accept-length`), or retrain at rope_theta "
            f"{ENGINE_ROPE_THETA:g} (what `draftset train` uses for MLA drafts)",
            src,
        )
    names = [k.replace("midlayer.", "layers.0.") for k in draft.tensors]
    attention = [k for k in names if ".self_attn." in k]
    absent = [alts[0] for alts in MLA_ATTENTION if not any(f"self_attn.{a}." in k for a in alts for k in attention)]
    if absent:
        gqa = [k for k in attention if any(f"self_attn.{p}." in k for p in ("k_proj", "v_proj"))]
        yield Finding(
            "weights.mla.attention",
            "error",
            "draft model.safetensors keys",
            f"the draft names an MLA class but has no self_attn {absent} weights"
            + (f" (it has GQA keys {gqa[:2]}: a Llama-style layer)" if gqa else ""),
            "both engines build MLA attention for this class and skip unknown names silently: the attention "
            "stays random, the server runs at near-zero acceptance",
            "set architectures to LlamaForCausalLMEagle3 for a Llama-style draft, or export the MLA weights",
            src,
        )


def without_llama_key_rules(draft: Draft, findings: list[Finding]) -> list[Finding]:
    """An MLA draft's keys are judged by mla_draft_rules, not by the Llama loader's table."""
    return [f for f in findings if f.rule not in LLAMA_KEY_RULES] if names_mla_class(draft) else findings


def sglang_version_limits(draft: Draft) -> Iterator[Finding]:
    """What one SGLang MLA draft loader takes and another does not; the command does not say which SGLang runs,
    so these are warnings naming the versions."""
    if not draft.cfg.get("q_lora_rank"):
        yield Finding(
            "mla.q_lora.missing",
            "warning",
            "draft config.json q_lora_rank",
            "an MLA draft without q_lora_rank (a plain q_proj)",
            "newer SGLang serves Eagle3DeepseekV2ForCausalLM with kimi_k25_eagle3.py, which raises ValueError "
            "('Eagle3 MLA layer requires q_lora_rank'); older deepseek_eagle3.py built a q_proj for it",
            "serve it with an SGLang whose deepseek_eagle3.py builds q_proj, or with vLLM; a draft for a target "
            "with q_lora_rank (DeepSeek-V3, Kimi-K2) gets one from `draftset train`",
            SGLANG_KIMI_SRC,
        )
    taps = (draft.cfg.get("eagle_config") or {}).get("eagle_aux_hidden_state_layer_ids") or [None] * 3
    if len(taps) != 3:
        yield Finding(
            "mla.fc.taps",
            "warning",
            "draft config.json eagle_config.eagle_aux_hidden_state_layer_ids",
            f"an MLA draft over {len(taps)} taps",
            "SGLang's deepseek_eagle3.py @ 76066f8f sizes fc for 3 taps (hidden_size * 3): the fc weight does not "
            "fit and loading stops; kimi_k25_eagle3.py and deepseek_eagle3.py @ 5da6caea size it from eagle_config",
            "serve it with a newer SGLang or vLLM, or train on 3 taps (`--layers` left at its default)",
            SGLANG_SRC,
        )
    options = [k for k in ("fc_norm", "norm_output") if draft.cfg.get(k)]
    if options:
        yield Finding(
            "mla.eagle31.sglang",
            "warning",
            "draft config.json " + " / ".join(options),
            f"an EAGLE-3.1 MLA draft ({', '.join(options)})",
            "only kimi_k25_eagle3.py builds fc_norm and feeds the post-norm state on; deepseek_eagle3.py "
            "(@ 76066f8f, 5da6caea) has neither: it skips fc_norm.* silently and feeds the pre-norm state, so the "
            "draft runs unlike it trained, with no error",
            "serve it with an SGLang whose Eagle3DeepseekV2ForCausalLM is kimi_k25_eagle3.py, or with vLLM (both "
            "options), or train without --fc-norm / --norm-output",
            SGLANG_KIMI_SRC,
        )
