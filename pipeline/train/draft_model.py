"""A compact EAGLE-3 draft in torch, named the way SGLang's `LlamaForCausalLMEagle3` loads it.

fc (n_aux·H_target → H) fuses the target's aux taps; one decoder layer takes [norm(embed); norm(fused)]
(2H in, H out) with Llama attention (RoPE, GQA) and MLP; `norm` + `lm_head` score the draft vocabulary.
The layer's pre-norm output is fed back as the next step's fused state (training-time test). EAGLE-3.1's
two options: `fc_norm` (one RMSNorm per aux tap before fc, weights `fc_norm.{k}.weight`, the key
eval/checks/draft_weights.py maps to SGLang's `model.fc_norm.{k}.weight`) and `norm_output` (the post-norm
state, the one lm_head reads, is what the next step gets). Written
by hand because no library ships this exact module; parameter names mirror SGLang so export renames
nothing. The attention is the config's (`DraftConfig.attention()`): this module's GQA layer, or DeepSeek's MLA
for a `DraftMLAConfig` (pipeline/train/draft_mla.py); both run EAGLE-3's training-time-test mask through
`ttt_attention` (pipeline/train/ttt_attention.py, the kernel the train stage picks).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Self

import torch
from pydantic import BaseModel, ConfigDict
from torch import nn
from torch.nn import functional as F

from pipeline.train.ttt_attention import ttt_attention

if TYPE_CHECKING:
    from pipeline.train.config import TTTAttention


class DraftShape(BaseModel):
    """What every draft architecture has: the fusion over the taps, the layer's width and MLP, norms, vocabularies,
    trained positions and the EAGLE-3.1 options. Each architecture adds its attention's fields (`own_fields`)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    hidden_size: int
    target_hidden_size: int
    n_aux: int
    num_attention_heads: int
    intermediate_size: int
    rms_norm_eps: float
    rope_theta: float
    vocab_size: int
    draft_vocab_size: int
    max_position_embeddings: int
    fc_norm: bool = False  # EAGLE-3.1: RMSNorm each aux tap before the fusion fc
    norm_output: bool = False  # EAGLE-3.1: feed the post-norm hidden state to the next draft step

    @classmethod
    def own_fields(cls, text: dict) -> dict:
        """The architecture's attention fields from the target's (text) config; may override rope_theta."""
        raise NotImplementedError

    @classmethod
    def from_target(
        cls,
        mcfg: dict,
        n_aux: int,
        draft_vocab_size: int,
        max_length: int,
        fc_norm: bool = False,
        norm_output: bool = False,
        intermediate_size: int | None = None,
    ) -> Self:
        """A draft as wide as the target, with its heads, MLP width (or `intermediate_size`), norm eps and RoPE base
        (a multimodal config's text model: Kimi-K2.5 nests it under text_config)."""
        text = mcfg.get("text_config") or mcfg
        hidden = int(text["hidden_size"])
        shared = {
            "hidden_size": hidden,
            "target_hidden_size": hidden,
            "n_aux": n_aux,
            "num_attention_heads": int(text["num_attention_heads"]),
            "intermediate_size": intermediate_size or int(text["intermediate_size"]),
            "rms_norm_eps": float(text.get("rms_norm_eps", 1e-6)),
            "rope_theta": float(
                text.get("rope_theta") or (text.get("rope_parameters") or {}).get("rope_theta", 10000.0)
            ),
            "vocab_size": int(text["vocab_size"]),
            "draft_vocab_size": draft_vocab_size,
            "max_position_embeddings": max_length,
            "fc_norm": fc_norm,
            "norm_output": norm_output,
        }
        return cls(**{**shared, **cls.own_fields(text)})

    @classmethod
    def from_exported(cls, cfg: dict, n_aux: int) -> Self:
        """The draft's own shape from an exported config.json (which names the taps' count by engine keys)."""
        options = {"fc_norm": bool(cfg.get("fc_norm", False)), "norm_output": bool(cfg.get("norm_output", False))}
        own = [k for k in cls.model_fields if k not in ("n_aux", "attention_kind", *options)]
        return cls.model_validate({**{k: cfg[k] for k in own}, **options, "n_aux": n_aux})

    def attention(self) -> DraftAttention:
        """The layer's attention module: each architecture's config builds its own (the layer never names one)."""
        raise NotImplementedError(type(self).__name__)


class DraftConfig(DraftShape):
    """The Llama-style draft: RoPE + GQA attention (num_key_value_heads of head_dim)."""

    num_key_value_heads: int
    head_dim: int

    @classmethod
    def own_fields(cls, text: dict) -> dict:
        heads = int(text["num_attention_heads"])
        return {
            "num_key_value_heads": int(text.get("num_key_value_heads") or heads),
            "head_dim": int(text.get("head_dim") or int(text["hidden_size"]) // heads),
        }

    def attention(self) -> Attention:
        return Attention(self)

    @classmethod
    def tiny(
        cls,
        hidden_size: int = 16,
        vocab_size: int = 40,
        draft_vocab_size: int | None = None,
        max_length: int = 64,
        head_dim: int = 8,
        n_aux: int = 3,
    ) -> DraftConfig:
        """A small draft over a target of the same width, for tests and CPU benchmarks: hidden_size/head_dim
        heads, half as many KV heads (GQA), an MLP twice as wide, Llama's norm eps and RoPE base."""
        heads = max(1, hidden_size // head_dim)
        return cls(
            hidden_size=hidden_size,
            target_hidden_size=hidden_size,
            n_aux=n_aux,
            num_attention_heads=heads,
            num_key_value_heads=max(1, heads // 2),
            head_dim=head_dim,
            intermediate_size=2 * hidden_size,
            rms_norm_eps=1e-6,
            rope_theta=10000.0,
            vocab_size=vocab_size,
            draft_vocab_size=draft_vocab_size or vocab_size,
            max_position_embeddings=max_length,
        )


def _rope(x: torch.Tensor, pos: torch.Tensor, theta: float) -> torch.Tensor:
    """Rotary embedding (Llama's rotate-half layout) for x [B, heads, L, d] at positions pos [L]."""
    d = x.shape[-1]
    inv = 1.0 / (theta ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d))
    ang = pos.to(torch.float32)[:, None] * inv[None, :]
    cos, sin = torch.cat([ang, ang], -1).cos().to(x.dtype), torch.cat([ang, ang], -1).sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return x * cos + torch.cat([-x2, x1], -1) * sin


class RMSNorm(nn.RMSNorm):
    """RMSNorm computed in fp32 whatever the autocast dtype, like HF's LlamaRMSNorm.

    Under bf16 autocast the input arrives in bf16 while the weight is an fp32 master parameter; torch's
    rms_norm then warns "Mismatch dtype between input and weight" and falls back to its unfused path.
    Matching the input to the weight keeps the fused kernel and fp32 statistics; the output goes back
    to the input's dtype."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x.to(self.weight.dtype), self.normalized_shape, self.weight, self.eps).to(x.dtype)


class DraftAttention(nn.Module):
    """The draft layer's attention, whatever its architecture: `project` gives every head's q, k, v with rope
    applied; the training-time-test attention and the output projection are the same for all (the eval runner
    reads `project`, `scale` and `o_proj` too)."""

    scale: float
    o_proj: nn.Linear
    # Which kernel computes the training-time-test attention (pipeline/train/ttt_attention.py): a training choice,
    # set by the train stage, never part of the draft's config (the math, so the weights, is the same for all).
    ttt_kernel: TTTAttention = "eager"

    def project(self, x: torch.Tensor, pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        raise NotImplementedError(type(self).__name__)

    def forward(self, x: torch.Tensor, pos: torch.Tensor, cache: list) -> torch.Tensor:
        out = ttt_attention(*self.project(x, pos), cache, self.scale, self.ttt_kernel)
        return self.o_proj(out.transpose(1, 2).reshape(x.shape[0], x.shape[1], -1))


class Attention(DraftAttention):
    """Llama attention (RoPE, GQA) over the layer's 2H input."""

    def __init__(self, c: DraftConfig):
        super().__init__()
        self.c = c
        self.scale = 1.0 / math.sqrt(c.head_dim)
        self.q_proj = nn.Linear(2 * c.hidden_size, c.num_attention_heads * c.head_dim, bias=False)
        self.k_proj = nn.Linear(2 * c.hidden_size, c.num_key_value_heads * c.head_dim, bias=False)
        self.v_proj = nn.Linear(2 * c.hidden_size, c.num_key_value_heads * c.head_dim, bias=False)
        self.o_proj = nn.Linear(c.num_attention_heads * c.head_dim, c.hidden_size, bias=False)

    def project(self, x: torch.Tensor, pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(q, k, v) [B, heads, L, head_dim] at positions pos, RoPE applied, KV heads repeated to every head."""
        c, (b, n, _) = self.c, x.shape
        q = self.q_proj(x).view(b, n, c.num_attention_heads, c.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, n, c.num_key_value_heads, c.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, n, c.num_key_value_heads, c.head_dim).transpose(1, 2)
        q, k = _rope(q, pos, c.rope_theta), _rope(k, pos, c.rope_theta)
        rep = c.num_attention_heads // c.num_key_value_heads
        return q, k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)


class MLP(nn.Module):
    def __init__(self, c: DraftShape):
        super().__init__()
        self.gate_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.up_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class MidLayer(nn.Module):
    def __init__(self, c: DraftShape):
        super().__init__()
        self.input_layernorm = RMSNorm(c.hidden_size, eps=c.rms_norm_eps)
        self.hidden_norm = RMSNorm(c.hidden_size, eps=c.rms_norm_eps)
        self.self_attn = (
            c.attention()
        )  # Llama GQA (DraftConfig); MLA for a DraftMLAConfig (pipeline/train/draft_mla.py)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, eps=c.rms_norm_eps)
        self.mlp = MLP(c)

    def forward(self, embeds: torch.Tensor, hidden: torch.Tensor, pos: torch.Tensor, cache: list) -> torch.Tensor:
        x = torch.cat([self.input_layernorm(embeds), self.hidden_norm(hidden)], -1)
        residual = hidden + self.self_attn(x, pos, cache)
        return residual + self.mlp(self.post_attention_layernorm(residual))


class Eagle3Draft(nn.Module):
    d2t: torch.Tensor  # buffers, registered in __init__
    t2d: torch.Tensor

    def __init__(self, c: DraftShape):
        super().__init__()
        self.config = c
        self.fc = nn.Linear(c.n_aux * c.target_hidden_size, c.hidden_size, bias=False)
        if c.fc_norm:
            self.fc_norm = nn.ModuleList(RMSNorm(c.target_hidden_size, eps=c.rms_norm_eps) for _ in range(c.n_aux))
        self.midlayer = MidLayer(c)
        self.norm = RMSNorm(c.hidden_size, eps=c.rms_norm_eps)
        self.lm_head = nn.Linear(c.hidden_size, c.draft_vocab_size, bias=False)
        self.register_buffer("d2t", torch.zeros(c.draft_vocab_size, dtype=torch.long))
        self.register_buffer("t2d", torch.zeros(c.vocab_size, dtype=torch.bool))

    def fuse(self, aux: torch.Tensor) -> torch.Tensor:
        """Step 0's fused state from the concatenated taps [B, L, n_aux·H_target], each tap normed first
        under fc_norm (the taps' scales differ by layer depth; the norm evens them out before fc)."""
        if self.config.fc_norm:
            taps = aux.split(self.config.target_hidden_size, -1)
            aux = torch.cat([norm(t) for norm, t in zip(self.fc_norm, taps, strict=True)], -1)
        return self.fc(aux)

    def step(
        self, embeds: torch.Tensor, hidden: torch.Tensor, pos: torch.Tensor, cache: list
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One speculation step: (draft logits [B, L, K], the state fed to the next step: the layer's
        pre-norm output, or under norm_output the normed one lm_head reads)."""
        out = self.midlayer(embeds, hidden, pos, cache)
        normed = self.norm(out)
        return self.lm_head(normed), (normed if self.config.norm_output else out)

    def use_ttt_attention(self, kernel: TTTAttention) -> None:
        """Compute the training-time-test attention with `kernel` from now on (the exported config never says)."""
        self.midlayer.self_attn.ttt_kernel = kernel

    def to_target_ids(self, draft_ids: torch.Tensor) -> torch.Tensor:
        return draft_ids + self.d2t[draft_ids]
