"""EAGLE-3's training-time-test attention, three ways with the same math: `eager` (the reference), `sdpa` and `flex`.

At step 0 a query attends causally over step 0's keys. At step k >= 1, query t also attends to its own position's
keys of steps 1..k (the chain a served draft builds): softmax over [q·k0_j for j <= t ; q·k_i[t] for i in 1..k].
`eager` writes that as one [B, h, L, L + k] score matrix per step, O(L²) memory each step, the training bottleneck
at long rows. The other two compute the causal part with a fused kernel and add the k "diagonal" terms per query:
  flex: flex_attention over (k0, v0) with a causal block mask returns o0 and the log-sum-exp lse0 per query (both
        differentiable in torch 2.13: its backward takes grad_logsumexp), merged in fp32 as
        out = (e^(lse0-m) o0 + Σ e^(s_i-m) v_i) / (e^(lse0-m) + Σ e^(s_i-m)),  m = max(lse0, s_i).
  sdpa: torch's fused sdpa kernels return no differentiable lse (the efficient and flash ops' log_sumexp outputs
        are `output_differentiability: False` in derivatives.yaml), and masking [k0 ; every step's keys] would cost
        k+1 times the causal part. Instead one extra "sink" key carries the diagonal terms' lse c = log Σ e^(s_i):
        its score for query t is c_t (an extra q channel against a 1 in the sink key) and its value is a
        one-hot channel, so sdpa's own softmax gives (Z0 o0, e^c) / (Z0 + e^c) and
        out = o[:dv] + o[dv] · softmax(s)·v_diag  is the exact answer, with no division and sdpa's exact backward.
Every tensor is [B, h, L, d]; k has q's head dim, v may have another (MLA: qk 192, v 128): flex and the efficient
sdpa kernel take that, and flash sdpa runs when they are equal. GQA/MLA expand their keys to every head first.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
from torch.nn import functional as F
from torch.nn.attention.bias import causal_lower_right

if TYPE_CHECKING:
    from torch.nn.attention.flex_attention import BlockMask

    from pipeline.train.config import TTTAttention

Kernel = Callable[[torch.Tensor, list, float], torch.Tensor]


def ttt_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cache: list, scale: float, kernel: TTTAttention = "eager"
) -> torch.Tensor:
    """This step's attention output [B, h, L, d_v]; `cache` collects each step's (k, v), step 0's first."""
    cache.append((k, v))
    if len(cache) == 1:  # step 0: plain causal attention, already fused
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
    return KERNELS[kernel](q, cache, scale)


def _diagonal(q: torch.Tensor, cache: list, scale: float) -> torch.Tensor:
    """Each query's scores against its own position's keys of steps 1..k, in fp32 [B, h, L, k]."""
    return torch.stack([(q * ki).sum(-1) * scale for ki, _ in cache[1:]], -1).float()


def eager(q: torch.Tensor, cache: list, scale: float) -> torch.Tensor:
    """The reference: the full score matrix over [step-0 keys ; the diagonal], softmax in fp32."""
    n = q.shape[2]
    k0, v0 = cache[0]
    causal = torch.ones(n, n, dtype=torch.bool, device=q.device).tril()
    s0 = (q @ k0.transpose(-1, -2) * scale).masked_fill(~causal, float("-inf"))
    diag = torch.stack([(q * ki).sum(-1) * scale for ki, _ in cache[1:]], -1)  # [B, h, L, steps]
    p = torch.softmax(torch.cat([s0, diag], -1).float(), -1).to(q.dtype)
    return p[..., :n] @ v0 + sum(p[..., n + i, None] * vi for i, (_, vi) in enumerate(cache[1:]))


def merge(o0: torch.Tensor, lse0: torch.Tensor, diag: torch.Tensor, cache: list) -> torch.Tensor:
    """The causal part (o0 [B, h, L, d_v], its lse0 [B, h, L]) merged with the diagonal scores [B, h, L, k] and
    values, in fp32. m only keeps the exponents <= 0: the result does not depend on it, so it carries no gradient."""
    m = torch.maximum(lse0.float(), diag.amax(-1)).detach()
    w0, wd = torch.exp(lse0.float() - m), torch.exp(diag - m[..., None])
    num = w0[..., None] * o0.float() + sum(wd[..., i, None] * vi.float() for i, (_, vi) in enumerate(cache[1:]))
    return (num / (w0 + wd.sum(-1))[..., None]).to(o0.dtype)


@functools.lru_cache(maxsize=16)  # rows of many widths train in one run; a mask is (L/128)² blocks, small
def causal_block_mask(n: int, device: str) -> BlockMask:
    from torch.nn.attention.flex_attention import create_block_mask

    return create_block_mask(lambda b, h, qi, ki: qi >= ki, None, None, n, n, device=device)


@functools.cache
def _flex(device_type: str) -> Callable:
    """flex_attention compiled on CUDA (uncompiled it runs an unfused reference that materializes the scores). Left
    to torch.compile's automatic dynamic shapes: a second row width recompiles once with L symbolic, not per width.
    On CPU torch 2.13 has no flex backward at all (the stage refuses `flex` there), so inference runs uncompiled."""
    from torch.nn.attention.flex_attention import flex_attention

    if device_type == "cuda":
        return torch.compile(flex_attention)
    return flex_attention


def flex(q: torch.Tensor, cache: list, scale: float) -> torch.Tensor:
    """flex_attention's causal output and lse over (k0, v0), merged with the diagonal terms."""
    from torch.nn.attention.flex_attention import AuxRequest

    k0, v0 = cache[0]
    mask = causal_block_mask(q.shape[2], str(q.device))
    o0, aux = _flex(q.device.type)(q, k0, v0, block_mask=mask, scale=scale, return_aux=AuxRequest(lse=True))
    return merge(o0, aux.lse, _diagonal(q, cache, scale), cache)


ALIGN = 8  # fused sdpa kernels want head dims a multiple of 8 (bf16); padded with zeros, which change no score


def sdpa(q: torch.Tensor, cache: list, scale: float) -> torch.Tensor:
    """Fused sdpa over [sink ; k0] with lower-right causal masking (query t sees the sink and k0[0..t]): the sink's
    score is the diagonal terms' lse, its value a one-hot channel that returns its softmax weight."""
    (b, h, n, d), (k0, v0), dv = q.shape, cache[0], cache[0][1].shape[-1]
    diag = _diagonal(q, cache, scale)
    c = diag.logsumexp(-1)  # [B, h, L]
    p = torch.softmax(diag, -1)
    v_diag = sum(p[..., i, None] * vi.float() for i, (_, vi) in enumerate(cache[1:]))
    # c/scale in one q channel against a 1 in the sink key: in bf16 that rounds the sink's score as much as eager's
    # bf16 scores are rounded (a hi + lo split of two channels measured no closer to fp32: other roundings dominate)
    pq, pv = -(d + 1) % ALIGN + 1, -(dv + 1) % ALIGN + 1  # extra q/k and v channels, the head dims made aligned
    q_ = torch.cat([q, (c / scale).to(q.dtype)[..., None], q.new_zeros(b, h, n, pq - 1)], -1)
    sink_k = k0.new_zeros(b, h, 1, d + pq)
    sink_k[..., d] = 1
    sink_v = v0.new_zeros(b, h, 1, dv + pv)
    sink_v[..., dv] = 1
    k_ = torch.cat([sink_k, F.pad(k0, (0, pq))], 2)
    v_ = torch.cat([sink_v, F.pad(v0, (0, pv))], 2)
    o = F.scaled_dot_product_attention(q_, k_, v_, attn_mask=causal_lower_right(n, n + 1), scale=scale)
    return (o[..., :dv].float() + o[..., dv, None].float() * v_diag).to(q.dtype)


KERNELS: dict[str, Kernel] = {"eager": eager, "sdpa": sdpa, "flex": flex}
