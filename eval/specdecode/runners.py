"""The two incremental forwards speculative decoding needs: the target with a KV cache, and the draft.

TargetRunner feeds new tokens to a transformers causal LM over its own KV cache and returns, per new
position, the logits and every hidden state under draftset's layer convention (index j = HF
`output_hidden_states[j]` for j < n, index n = the last block's output before the final norm), so any
wiring of aux taps, right or wrong, can be fed to the draft. Rejected positions are cropped away.

DraftRunner runs the exported EAGLE-3 draft (pipeline/train/draft_model.py) incrementally with the same
weights and the attention pattern training used: a committed KV cache of step-0 entries (one per
position whose real aux state the target has produced), and a chain of speculative steps on top of it
that is thrown away after each round. Step k of the chain sits at position p + k, exactly as training
places it (pipeline/train/ttt.py).
"""

from __future__ import annotations

import warnings
from typing import Any, Literal, overload

import torch
from torch.nn import functional as F

from pipeline.train.draft_model import Eagle3Draft


class TargetRunner:
    def __init__(self, model: Any):  # a transformers causal LM
        from transformers import DynamicCache

        self.model = model
        self.n_layers = int(model.config.num_hidden_layers)
        self.device = next(model.parameters()).device
        self._cache_cls = DynamicCache
        self.cache: Any = None  # a transformers DynamicCache after reset()
        self._last: list[torch.Tensor] = []
        # the final norm's input is the pre-norm last state (transformers returns index n after the norm)
        model.base_model.norm.register_forward_pre_hook(lambda _m, args: self._last.append(args[0]))

    def reset(self) -> None:
        self.cache = self._cache_cls(config=self.model.config)

    @property
    def length(self) -> int:
        return self.cache.get_seq_length()

    @overload
    def forward(
        self, tokens: list[int], need_states: Literal[True] = True
    ) -> tuple[torch.Tensor, list[torch.Tensor]]: ...

    @overload
    def forward(self, tokens: list[int], need_states: Literal[False]) -> tuple[torch.Tensor, None]: ...

    def forward(self, tokens: list[int], need_states: bool = True) -> tuple[torch.Tensor, list[torch.Tensor] | None]:
        """(logits [n, V], states: list of [n, H] per HF index 0..n or None) for `tokens` after the cache."""
        ids = torch.tensor([tokens], device=self.device)
        self._last.clear()
        with torch.inference_mode(), warnings.catch_warnings():
            # transformers ≥ 5.24 renames past_key_values to cache; the GPU hosts' 5.17 knows only the old name
            warnings.filterwarnings("ignore", message=".*past_key_values.*", category=FutureWarning)
            out = self.model(
                input_ids=ids, past_key_values=self.cache, use_cache=True, output_hidden_states=need_states
            )
        states = [h[0] for h in out.hidden_states[:-1]] + [self._last[0][0]] if need_states else None
        return out.logits[0], states

    def crop(self, length: int) -> None:
        """Keep the first `length` positions (negative: transformers 5 dropped crop-to-absolute-length)."""
        extra = self.length - length
        if extra > 0:
            self.cache.crop(-extra)


class DraftRunner:
    def __init__(self, draft: Eagle3Draft, target_embed: torch.Tensor, wiring: list[int]):
        self.draft, self.embed, self.wiring = draft, target_embed, wiring
        # committed step-0 keys/values [1, heads, T, d]
        self.k: torch.Tensor | None = None
        self.v: torch.Tensor | None = None
        # step 0's output [1, 1, H] and logits at the last committed position
        self.last_out: torch.Tensor | None = None
        self.last_logits: torch.Tensor | None = None

    def reset(self) -> None:
        self.k = self.v = self.last_out = self.last_logits = None

    @property
    def committed(self) -> int:
        return 0 if self.k is None else self.k.shape[2]

    def _block(
        self,
        tokens: torch.Tensor,
        hidden: torch.Tensor,
        pos: torch.Tensor,
        past: tuple[torch.Tensor, torch.Tensor] | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """The draft's one layer on new positions over `past` keys: (logits [n, K], out [1, n, H], k, v)."""
        layer = self.draft.midlayer
        att = layer.self_attn  # Llama GQA or MLA: project() gives every head's q, k, v with rope applied
        embeds = F.embedding(tokens, self.embed)[None]
        x = torch.cat([layer.input_layernorm(embeds), layer.hidden_norm(hidden)], -1)
        n = x.shape[1]
        q, k, v = att.project(x, pos)
        if past is not None:
            k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
        before = k.shape[2] - n  # new query i sees every earlier key and new keys up to itself
        mask = torch.arange(k.shape[2], device=x.device)[None, :] <= before + torch.arange(n, device=x.device)[:, None]
        attn = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=att.scale)
        residual = hidden + att.o_proj(attn.transpose(1, 2).reshape(1, n, -1))
        out = residual + layer.mlp(layer.post_attention_layernorm(residual))
        normed = self.draft.norm(out)  # EAGLE-3.1 norm_output feeds this normed state on, as training did
        return self.draft.lm_head(normed)[0], (normed if self.draft.config.norm_output else out), k, v

    def commit(self, states: list[torch.Tensor], next_tokens: list[int]) -> None:
        """Step 0 over positions whose aux the target just produced; next_tokens[i] = x[p_i + 1]."""
        # bf16-rounded first: training only ever saw taps as captured (pipeline/capture/forward.py), and a
        # bf16 server hands the draft bf16 taps too
        aux = torch.cat([states[j] for j in self.wiring], -1)[None].to(torch.bfloat16).to(self.embed.dtype)
        start = self.committed
        pos = torch.arange(start, start + aux.shape[1], device=aux.device)
        tokens = torch.tensor(next_tokens, device=aux.device)
        with torch.inference_mode():
            past = None if self.k is None or self.v is None else (self.k, self.v)
            logits, out, self.k, self.v = self._block(tokens, self.draft.fuse(aux), pos, past)
        self.last_out, self.last_logits = out[:, -1:], logits[-1]

    def propose(self, steps: int) -> list[int]:
        """`steps` chained draft tokens (target vocabulary ids) from the last committed position."""
        proposals: list[int] = []
        p = self.committed - 1
        with torch.inference_mode():
            if self.last_logits is None or self.last_out is None or self.k is None or self.v is None:
                raise RuntimeError("propose() before commit(): the draft has no position to speculate from")
            logits: torch.Tensor = self.last_logits  # step 0 at p ran in commit
            hidden: torch.Tensor = self.last_out
            k, v = self.k, self.v
            for step in range(1, steps + 1):
                token = int(self.draft.to_target_ids(logits.argmax(-1)))
                proposals.append(token)
                if step == steps:
                    break
                pos = torch.tensor([p + step], device=hidden.device)
                logits, hidden, k, v = self._block(torch.tensor([token], device=hidden.device), hidden, pos, (k, v))
                logits = logits[-1]
        return proposals
