"""Which draft architecture a target gets, and how each one is named in a checkpoint and an export.

  llama: the Llama-style EAGLE-3 layer (`LlamaForCausalLMEagle3`, pipeline/train/draft_model.py), for every
         target without MLA attention;
  mla:   the MLA layer (`Eagle3DeepseekV2ForCausalLM`, pipeline/train/draft_mla.py) for DeepSeek-V3-shaped
         targets (DeepSeek-V2/V3, Kimi-K2/K2.5): the layout the engines' MLA draft path and the public
         Kimi-K2.6/K2.7 drafts use, whose KV cache has the target's MLA shape.
`auto` (the default of `train --draft-arch`) picks by the target's config.json; either can be forced. Light (no
torch at import): `check serve` reads the target rule from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from catalog.errors import DraftsetError

if TYPE_CHECKING:
    from pipeline.train.draft_mla import DraftMLAConfig
    from pipeline.train.draft_model import DraftConfig

DraftArch = Literal["auto", "llama", "mla"]
MLA_FIELDS = ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim")
MLA_SHAPE = ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")  # what sizes an MLA draft
MLA_MODEL_TYPES = ("deepseek_v2", "deepseek_v3", "kimi_k2")
MLA_ARCHITECTURE = "Eagle3DeepseekV2ForCausalLM"  # vLLM registers it (and ...V3...) for one class; SGLang too


def is_mla_target(target: dict) -> bool:
    """DeepSeek-V3-shaped: MLA fields in the (text) config, or a DeepSeek-V2/V3 / Kimi-K2 model_type."""
    text = target.get("text_config") or target
    if any(text.get(k) is not None for k in MLA_FIELDS):
        return True
    types = {text.get("model_type"), target.get("model_type")}
    archs = [*(target.get("architectures") or []), *(text.get("architectures") or [])]
    return bool(types & set(MLA_MODEL_TYPES)) or any(a.startswith(("DeepseekV2", "DeepseekV3")) for a in archs)


def choose_arch(target: dict, requested: DraftArch = "auto") -> Literal["llama", "mla"]:
    """The draft architecture for this target: `auto` follows its attention; `mla` needs its MLA dims."""
    if requested == "llama":
        return "llama"
    text = target.get("text_config") or target
    missing = [k for k in MLA_SHAPE if not isinstance(text.get(k), int)]
    if requested == "mla" or is_mla_target(target):
        if missing:
            why = "an MLA draft takes its latent ranks and head dims from the target's config.json"
            raise DraftsetError(
                f"cannot build an MLA draft: the target's config.json has no {missing} ({why})",
                hint="train with --draft-arch llama, or point --model at the DeepSeek-V3-style target's own config",
            )
        return "mla"
    return "llama"


def draft_config_for(
    target: dict,
    requested: DraftArch,
    n_aux: int,
    draft_vocab_size: int,
    max_length: int,
    fc_norm: bool = False,
    norm_output: bool = False,
    intermediate_size: int | None = None,
) -> DraftConfig | DraftMLAConfig:
    from pipeline.train.draft_mla import DraftMLAConfig
    from pipeline.train.draft_model import DraftConfig

    kind = DraftMLAConfig if choose_arch(target, requested) == "mla" else DraftConfig
    return kind.from_target(target, n_aux, draft_vocab_size, max_length, fc_norm, norm_output, intermediate_size)


def is_mla_dump(draft: dict) -> bool:
    """A draft's saved shape (resolved.json `draft`) or exported config.json is the MLA one."""
    return draft.get("attention_kind") == "mla" or MLA_ARCHITECTURE in (draft.get("architectures") or [])


def exported_draft_config(cfg: dict, n_aux: int) -> DraftConfig | DraftMLAConfig:
    """The draft's shape from an exported config.json, whichever architecture it names."""
    from pipeline.train.draft_mla import DraftMLAConfig
    from pipeline.train.draft_model import DraftConfig

    return (DraftMLAConfig if is_mla_dump(cfg) else DraftConfig).from_exported(cfg, n_aux)


def mla_config_json(config: dict, draft: dict) -> dict:
    """The Llama-style export config.json rewritten for the MLA draft: the class and config type the engines
    load, the MLA fields their layer reads (SGLang as attributes, vLLM with 0 defaults; see draft_mla.py), no
    GQA fields. model_type deepseek_v3 because transformers ships that config class (no remote code), which
    is what vLLM's AutoConfig and SpecForge's MLA trainer build the draft's config from."""
    out = {k: v for k, v in config.items() if k not in ("head_dim", "num_key_value_heads")}
    mla = {
        "architectures": [MLA_ARCHITECTURE],
        "model_type": "deepseek_v3",
        "num_key_value_heads": draft["num_attention_heads"],  # DeepseekV3Config's convention under MLA
        "q_lora_rank": draft["q_lora_rank"],
        "kv_lora_rank": draft["kv_lora_rank"],
        "qk_nope_head_dim": draft["qk_nope_head_dim"],
        "qk_rope_head_dim": draft["qk_rope_head_dim"],
        "v_head_dim": draft["v_head_dim"],
        "rope_interleave": True,  # HF's name for the interleaved-pair rope the draft trained
        "rope_parameters": {"rope_type": "default", "rope_theta": draft["rope_theta"]},  # transformers >= 5
        # one dense layer: SGLang's DeepseekV2DecoderLayer (deepseek_eagle3.py @ 76066f8f builds on it) makes layer 0
        # MoE unless first_k_dense_replace > 0; vLLM's Eagle3 layer is always dense. (n_routed_experts: null would
        # say it too, but transformers >= 5 refuses the config: the field is a strict int.)
        "first_k_dense_replace": 1,
    }
    head = ("architectures", "model_type")
    return {**{k: mla[k] for k in head}, **{k: v for k, v in out.items() if k not in head}, **mla}
