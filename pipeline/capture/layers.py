"""The one hidden-state layer convention, encoded once (DESIGN.md "Hidden-state layer ids").

Internal id j is a Hugging Face `output_hidden_states` index: j = 0 is the embedding output and
j = k + 1 is the residual stream after decoder block k, before the final norm. The verifier state
is the last block's output before the final norm; transformers returns index n *after* the final
norm, so capture takes the verifier state from the final norm's input instead (see capture.run).

Engines number the same taps differently:
  SGLang  `eagle_config.eagle_aux_hidden_state_layer_ids = [j - 1]`; it captures id `v` as the input
          of block v + 1, so only 0 <= v <= n - 2 (j in 1..n-1) can ever be captured.
  vLLM / speculators  top-level `eagle_aux_hidden_state_layer_ids = [j]`.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, model_validator

from catalog.errors import DraftsetError

TAP_MEANING = (
    "HF output_hidden_states index j: 0 = embedding output, j = k+1 = residual stream after "
    "decoder block k, before the final norm; aux taps concatenated in ascending j"
)
VERIFIER_MEANING = "last decoder block output before the final norm (input of the target's final norm)"


def default_aux_layers(n_layers: int) -> list[int]:
    """EAGLE-3's default taps: inputs of blocks 2, n//2 and n-3 (also SpecForge's [1, n//2-1, n-4] + 1)."""
    return [2, n_layers // 2, n_layers - 3]


class LayerPlan(BaseModel):
    """Which hidden states a capture stores, validated against the target's depth."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    n_layers: int
    aux: list[int]

    @model_validator(mode="after")
    def _check(self) -> LayerPlan:
        if self.n_layers < 1:
            raise DraftsetError(f"target has {self.n_layers} decoder layers", hint="check the model's config.json")
        if not self.aux:
            raise DraftsetError("no aux layers given", hint=f"use the default {default_aux_layers(self.n_layers)}")
        if self.aux != sorted(set(self.aux)):
            raise DraftsetError(
                f"aux layer ids {self.aux} must be unique and ascending (concatenation order)",
                hint=f"pass them sorted: {sorted(set(self.aux))}",
            )
        bad = [j for j in self.aux if not 0 <= j <= self.n_layers - 1]
        if bad:
            raise DraftsetError(
                f"aux layer ids {bad} outside 0..{self.n_layers - 1} for a {self.n_layers}-layer target",
                hint="ids are HF hidden-state indices (0 = embedding; n is the verifier state, stored separately)",
            )
        return self

    @classmethod
    def resolve(cls, n_layers: int, aux: list[int] | None) -> LayerPlan:
        return cls(n_layers=n_layers, aux=sorted(aux) if aux else default_aux_layers(n_layers))

    # -- engine conventions ------------------------------------------------------------------
    def sglang_ids(self) -> list[int]:
        """`eagle_config.eagle_aux_hidden_state_layer_ids`, refusing taps SGLang cannot capture."""
        ids = to_sglang(self.aux)
        uncapturable = from_sglang(sglang_uncapturable(self.n_layers, ids))
        if uncapturable:
            raise DraftsetError(
                f"layer ids {uncapturable} cannot be captured by SGLang (it taps id v as the input of block v+1, "
                f"so only HF indices 1..{self.n_layers - 1} work; 0 is the embedding)",
                hint=f"capture and train with capturable taps, e.g. {default_aux_layers(self.n_layers)}",
            )
        return ids

    def vllm_ids(self) -> list[int]:
        return list(self.aux)


# The ±1 between the conventions lives only in these three functions.
def to_sglang(hf_ids: list[int]) -> list[int]:
    """HF hidden-state indices → SGLang ids (unchecked; see LayerPlan.sglang_ids for the checked form)."""
    return [j - 1 for j in hf_ids]


def from_sglang(ids: list[int]) -> list[int]:
    return [v + 1 for v in ids]


def sglang_uncapturable(n_layers: int, sglang_ids: list[int]) -> list[int]:
    """The SGLang ids from `sglang_ids` that SGLang would never capture."""
    return [v for v in sglang_ids if not 0 <= v <= n_layers - 2]


# -- SGLang's tap rule, by target architecture ------------------------------------------------------
# SGLang 0.5.23 (python/sglang/srt/models/*.py, `set_eagle3_layers_to_capture`) turns the draft's
# `eagle_config.eagle_aux_hidden_state_layer_ids` into `layers_to_capture` differently per model class,
# then captures the residual stream entering block i (= HF index i) for every i in it (model_runner
# passes None when the draft has no such key: the defaults [2, n//2, n-3] are then used unshifted).
# The table lists every architecture whose class has the method (read from the 0.5.23 wheel; found
# through EntryClass and base classes); any other architecture makes EAGLE3 startup fail.
_PLUS_ONE = (
    "Apertus BailingMoE BailingMoe BailingMoeV2 Cosmos3:C EmbeddingGemma:M ExaoneMoE ExaoneMoEForCausalLMMTP:X "
    "ExaoneMoe Gemma3 Gemma3:C Gemma4AssistantForCausalLM:X Gemma4 Gemma4:C Gemma4UnifiedAssistantForCausalLM:X "
    "Gemma4Unified:C Glm4Moe Glm4MoeForCausalLMNextN:X Glm5Next:C IQuestCoder InternLM3 InternS1Pro:C "
    "InternS2Mobius:C InternS2Preview:C Llama4 Llama4:C Llama LlamaForCausalLMEagle:X LlamaForCausalLMEagle3:X "
    "LongcatFlash LongcatFlashForCausalLMNextN:X Mellum MiniMaxM2 MiniMaxM3Sparse Ministral3 Mistral "
    "MistralForCausalLMEagle:X Phi3 Qwen2 Qwen2ForCausalLMEagle:X Qwen2Moe Qwen2_5_VL:C Qwen3 Qwen3Moe "
    "Qwen3MoeForCausalLMMTP:X Qwen3Next Qwen3NextForCausalLMMTP:X Qwen3VL:C Qwen3VLMoe:C Qwen3_5 Qwen3_5:C "
    "Qwen3_5Moe Qwen3_5Moe:C Qwen4Exp:C SarvamMoE TeleFLM"
)
_FIRST_IS_ONE = (
    "DeepseekV2 DeepseekV32 DeepseekV3 DeepseekV3ForCausalLMNextN:X Glm4MoeLite Glm4MoeLiteForCausalLMNextN:X "
    "Glm5NextForConditionalGenerationNextN:X GlmMoeDsa GlmMoeDsaForCausalLMNextN:X KimiK25:C MistralLarge3 "
    "MistralLarge3ForCausalLMEagle:X"
)
_SUFFIX = {"": "ForCausalLM", "C": "ForConditionalGeneration", "M": "Model", "X": ""}


def _names(packed: str) -> list[str]:
    return [n.split(":")[0] + _SUFFIX[n.split(":")[1] if ":" in n else ""] for n in packed.split()]


_RULE_FILES = {
    "plus_one": "python/sglang/srt/models/llama.py (and the other +1 classes)",
    "first_is_one": "python/sglang/srt/models/deepseek_v2.py (kimi_k25.py delegates to it)",
    "as_given_if_max_is_n": "python/sglang/srt/models/gpt_oss.py",
    "plus_one_default_too": "python/sglang/srt/models/minimax_m3_vl.py",
}
SGLANG_TAP_RULES: dict[str, str] = {
    **{a: "plus_one" for a in _names(_PLUS_ONE)},
    **{a: "first_is_one" for a in _names(_FIRST_IS_ONE)},
    "GptOssForCausalLM": "as_given_if_max_is_n",
    "MiniMaxM3SparseForConditionalGeneration": "plus_one_default_too",
}
# Classes whose forward also captures the final boundary (HF index n, before the final norm).
_CAPTURES_LAST = {
    "EmbeddingGemmaModel",
    "Gemma3ForCausalLM",
    "Gemma3ForConditionalGeneration",
    "Gemma4ForCausalLM",
    "Gemma4AssistantForCausalLM",
    "Gemma4UnifiedAssistantForCausalLM",
    "GptOssForCausalLM",
    "MiniMaxM3SparseForCausalLM",
}
SGLANG_TAPS_VERSION = "0.5.23"


class TapRule(BaseModel):
    """How the serving engine turns written layer ids into captured HF indices for one target."""

    model_config = ConfigDict(frozen=True)

    engine: str  # "sglang" | "vllm"
    architecture: str | None
    name: str  # plus_one | first_is_one | as_given_if_max_is_n | plus_one_default_too | as_given | none
    n_layers: int
    captures_last: bool
    source: str

    def describe(self) -> str:
        return f"{self.engine} {self.name} rule for {self.architecture or 'unknown architecture'} ({self.source})"


def target_layers(config: dict) -> int | None:
    """num_hidden_layers of a target config.json (multimodal wrappers keep it in text_config)."""
    for cfg in (config, config.get("text_config") or {}, config.get("language_config") or {}):
        if isinstance(cfg.get("num_hidden_layers"), int):
            return cfg["num_hidden_layers"]
    return None


def sglang_tap_rule(config: dict) -> TapRule:
    """SGLang's rule for the target described by `config` (its config.json): architectures[0] decides."""
    arch = (config.get("architectures") or [None])[0]
    n = target_layers(config)
    if n is None:
        raise DraftsetError(
            f"target config ({arch}) has no num_hidden_layers", hint="pass the target's own config.json"
        )
    name = SGLANG_TAP_RULES.get(arch or "", "none")
    source = (
        f"{_RULE_FILES[name]}, SGLang {SGLANG_TAPS_VERSION}"
        if name != "none"
        else f"python/sglang/srt/model_executor/model_runner_components/attention_backend_setup.py, SGLang "
        f"{SGLANG_TAPS_VERSION}: no set_eagle3_layers_to_capture"
    )
    return TapRule(
        engine="sglang", architecture=arch, name=name, n_layers=n, captures_last=arch in _CAPTURES_LAST, source=source
    )


def vllm_tap_rule(config: dict) -> TapRule:
    """vLLM reads top-level ids as given and also captures the final boundary (model_executor/models, 0.33)."""
    n = target_layers(config) or 0
    return TapRule(
        engine="vllm",
        architecture=(config.get("architectures") or [None])[0],
        name="as_given",
        n_layers=n,
        captures_last=True,
        source="vllm/v1/worker/gpu_model_runner.py + models/interfaces.py EagleModelMixin, vLLM 0.33.0",
    )


def engine_captures(rule: TapRule, written: list[int] | None) -> tuple[list[int], list[int]]:
    """(HF indices the engine captures, written ids it never captures) for the ids a draft config holds."""
    n = rule.n_layers
    if written is None:  # no ids in the draft: the model's default taps
        layers = default_aux_layers(n)
        if rule.name == "plus_one_default_too":
            layers = [v + 1 for v in layers]
    elif rule.name in ("plus_one", "plus_one_default_too"):
        layers = [v + 1 for v in written]
    elif rule.name == "first_is_one":
        layers = [v + 1 for v in written] if written and written[0] == 1 else list(written)
    elif rule.name == "as_given_if_max_is_n":
        layers = list(written) if written and max(written) == n else [v + 1 for v in written]
    else:  # vLLM as_given
        layers = list(written)
    top = n if rule.captures_last else n - 1
    captured = sorted({v for v in layers if 0 <= v <= top})
    lost = [w for w, v in zip(written or layers, layers) if not 0 <= v <= top]
    return captured, lost


def written_ids(rule: TapRule, hf_ids: list[int]) -> list[int]:
    """The ids to write so that `rule`'s engine captures exactly `hf_ids`; refuses taps it cannot express.

    j-1 is tried first (what every SGLang path, old or new, reads back for default taps), then j as given.
    """
    want = sorted(hf_ids)
    for candidate in ([j - 1 for j in want], list(want)):
        if min(candidate) >= 0 and engine_captures(rule, candidate)[0] == want and len(set(candidate)) == len(want):
            return candidate
    raise DraftsetError(
        f"{rule.describe()} cannot capture HF taps {want} on a {rule.n_layers}-layer target: "
        + (
            "no EAGLE3 capture for this architecture"
            if rule.name == "none"
            else f"written {[j - 1 for j in want]} it captures {engine_captures(rule, [j - 1 for j in want])[0]}, "
            f"written {want} it captures {engine_captures(rule, want)[0]}"
        ),
        hint=f"capture and train with taps this engine can express, e.g. {default_aux_layers(rule.n_layers)}",
    )


# Used only when the target's config.json is not at hand (export on another machine): the common families.
_ARCH_BY_MODEL_TYPE = {
    "llama": "LlamaForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "qwen3_moe": "Qwen3MoeForCausalLM",
    "mistral": "MistralForCausalLM",
    "deepseek_v2": "DeepseekV2ForCausalLM",
    "deepseek_v3": "DeepseekV3ForCausalLM",
    "kimi_k2": "DeepseekV3ForCausalLM",
    "kimi_k25": "KimiK25ForConditionalGeneration",
    "gpt_oss": "GptOssForCausalLM",
}


def target_config(model_dir: str | Path | None, model_type: str | None = None, n_layers: int | None = None) -> dict:
    """The target's config.json, or the architecture implied by its model_type when the file is absent."""
    path = Path(model_dir) / "config.json" if model_dir else None
    if path is not None and path.is_file():
        return json.loads(path.read_text())
    return {
        "architectures": [_ARCH_BY_MODEL_TYPE.get(model_type or "", f"unknown ({model_type})")],
        "model_type": model_type,
        "num_hidden_layers": n_layers,
    }
