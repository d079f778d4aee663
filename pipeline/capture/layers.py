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

from pydantic import BaseModel, ConfigDict, model_validator

from catalog.errors import DraftsetError

TAP_MEANING = ("HF output_hidden_states index j: 0 = embedding output, j = k+1 = residual stream after "
               "decoder block k, before the final norm; aux taps concatenated in ascending j")
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
            raise DraftsetError(f"aux layer ids {self.aux} must be unique and ascending (concatenation order)",
                                hint=f"pass them sorted: {sorted(set(self.aux))}")
        bad = [j for j in self.aux if not 0 <= j <= self.n_layers - 1]
        if bad:
            raise DraftsetError(
                f"aux layer ids {bad} outside 0..{self.n_layers - 1} for a {self.n_layers}-layer target",
                hint="ids are HF hidden-state indices (0 = embedding; n is the verifier state, stored separately)")
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
                hint=f"capture and train with capturable taps, e.g. {default_aux_layers(self.n_layers)}")
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
