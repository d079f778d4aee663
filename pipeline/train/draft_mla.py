"""The MLA EAGLE-3 draft for DeepSeek-V3-shaped targets (DeepSeek-V2/V3, Kimi-K2/K2.5): the layout the engines
load as `Eagle3DeepseekV2ForCausalLM`, the one the public Kimi-K2.6/K2.7 drafts use.

Everything but the attention is the Llama-style draft's (pipeline/train/draft_model.py: fc over the taps,
[input_layernorm(embed); hidden_norm(fused)] into one layer, dense MLP, norm, lm_head over the draft vocabulary,
d2t/t2d, the training-time-test mask). The attention is DeepSeek's Multi-head Latent Attention over the 2H input:
  q   = q_b_proj(q_a_layernorm(q_a_proj(x)))  (or q_proj(x) when the target has no q_lora_rank), per head
        [qk_nope_head_dim | qk_rope_head_dim]
  kv  = kv_a_proj_with_mqa(x) = [latent (kv_lora_rank) | k_pe (qk_rope_head_dim, one head shared by all)]
        kv_b_proj(kv_a_layernorm(latent)) per head [k_nope | v (v_head_dim)]
  rope on q_pe and k_pe only, in DeepSeek's interleaved-pair layout (both engines build it `is_neox_style=False`),
  softmax scale (qk_nope + qk_rope)^-0.5, o_proj from heads·v_head_dim to H.
Parameter names are the engines' checkpoint names under `midlayer.self_attn.` (both fuse q_a_proj with
kv_a_proj_with_mqa at load time; the checkpoint keeps them apart). Followed, read with the search tools:
  vLLM  vllm/model_executor/models/deepseek_eagle3.py and deepseek_v2.py (vllm-project/vllm @ 0c838b5a / 03590193)
  SGLang python/sglang/srt/models/deepseek_eagle3.py (sgl-project/sglang @ 76066f8f, 5da6caea) and
        kimi_k25_eagle3.py (@ 054a1cef, which registers Eagle3DeepseekV2ForCausalLM and requires q_lora_rank)
  the SpecForge/TorchSpec MLA trainer (Eagle3DeepseekV2ForCausalLM on a DeepseekV3Config), same math.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from pipeline.train.draft_model import DraftAttention, DraftShape, RMSNorm

# vLLM's Eagle3 DeepseekV2 layer rebuilds the rope parameters from `config.rope_scaling`: unset (transformers 4)
# gives {"rope_type": "default"} with no base, so get_rope falls back to 10000 whatever rope_theta says; under
# transformers 5 `rope_scaling` returns the rope_parameters, rope_theta included. SGLang reads rope_theta (or
# rope_parameters) as written. Training at 10000, and writing it, is the one base every one of these applies.
ENGINE_ROPE_THETA = 10000.0


class DraftMLAConfig(DraftShape):
    """The target's own MLA shape (heads, latent ranks, head dims; the dense MLP width from DraftShape): the
    draft's cache then has the target's MLA layout."""

    attention_kind: Literal["mla"] = "mla"  # tells a saved draft dump from the Llama one (pipeline/train/draft_arch.py)
    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int

    @classmethod
    def own_fields(cls, text: dict) -> dict:
        q_lora = text.get("q_lora_rank")
        return {
            "q_lora_rank": int(q_lora) if q_lora else None,
            **{k: int(text[k]) for k in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")},
            "rope_theta": ENGINE_ROPE_THETA,  # not the target's: see ENGINE_ROPE_THETA
        }

    def attention(self) -> MLAAttention:
        return MLAAttention(self)


def rope_interleaved(x: torch.Tensor, pos: torch.Tensor, theta: float) -> torch.Tensor:
    """DeepSeek's rotary embedding for x [B, heads, L, d] at positions pos [L]: pairs (0,1), (2,3), ... turn
    by frequency 0, 1, ... (GPT-J style; the engines' MLA rope is `is_neox_style=False`, HF's
    `rope_interleave`)."""
    d = x.shape[-1]
    inv = 1.0 / (theta ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d))
    ang = pos.to(torch.float32)[:, None] * inv[None, :]  # [L, d/2]
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack([even * cos - odd * sin, even * sin + odd * cos], -1).flatten(-2)


class MLAAttention(DraftAttention):
    def __init__(self, c: DraftMLAConfig):
        super().__init__()
        self.c = c
        width, heads, qk = 2 * c.hidden_size, c.num_attention_heads, c.qk_nope_head_dim + c.qk_rope_head_dim
        self.scale = qk**-0.5  # no YaRN mscale: the draft trains and is exported without rope scaling
        if c.q_lora_rank:
            self.q_a_proj = nn.Linear(width, c.q_lora_rank, bias=False)
            self.q_a_layernorm = RMSNorm(c.q_lora_rank, eps=c.rms_norm_eps)
            self.q_b_proj = nn.Linear(c.q_lora_rank, heads * qk, bias=False)
        else:
            self.q_proj = nn.Linear(width, heads * qk, bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(width, c.kv_lora_rank + c.qk_rope_head_dim, bias=False)
        self.kv_a_layernorm = RMSNorm(c.kv_lora_rank, eps=c.rms_norm_eps)
        self.kv_b_proj = nn.Linear(c.kv_lora_rank, heads * (c.qk_nope_head_dim + c.v_head_dim), bias=False)
        self.o_proj = nn.Linear(heads * c.v_head_dim, c.hidden_size, bias=False)

    def project(self, x: torch.Tensor, pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(q, k [B, heads, L, qk_nope + qk_rope], v [B, heads, L, v_head_dim]) at positions pos, rope applied;
        the one rope key head is shared by every head, as MLA caches it."""
        c, (b, n, _) = self.c, x.shape
        heads, nope, rope = c.num_attention_heads, c.qk_nope_head_dim, c.qk_rope_head_dim
        q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x))) if c.q_lora_rank else self.q_proj(x)
        q = q.view(b, n, heads, nope + rope).transpose(1, 2)
        latent, k_pe = self.kv_a_proj_with_mqa(x).split([c.kv_lora_rank, rope], -1)
        kv = self.kv_b_proj(self.kv_a_layernorm(latent)).view(b, n, heads, nope + c.v_head_dim).transpose(1, 2)
        k_nope, v = kv.split([nope, c.v_head_dim], -1)
        q_pe = rope_interleaved(q[..., nope:], pos, c.rope_theta)
        k_pe = rope_interleaved(k_pe.view(b, 1, n, rope), pos, c.rope_theta).expand(b, heads, n, rope)
        return torch.cat([q[..., :nope], q_pe], -1), torch.cat([k_nope, k_pe], -1), v
