"""The target's frozen pieces the draft needs: token embedding, final norm and lm_head.

Read straight from the target's safetensors (one file or an index), so a 1T-parameter target is never
loaded whole; tied embeddings (no `lm_head.weight`) fall back to the embedding matrix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.nn import functional as F

from catalog.errors import DraftsetError

KEYS = {"embed": "embed_tokens.weight", "norm": "norm.weight", "lm_head": "lm_head.weight"}


def _weight_files(model_dir: Path) -> dict[str, Path]:
    index = next(iter(model_dir.glob("*.safetensors.index.json")), None)
    if index is not None:
        return {k: model_dir / f for k, f in json.loads(index.read_text())["weight_map"].items()}
    from safetensors import safe_open

    where = {}
    for f in sorted(model_dir.glob("*.safetensors")):
        with safe_open(str(f), framework="pt") as h:
            where.update({k: f for k in h.keys()})
    return where


def _find(where: dict[str, Path], suffix: str) -> str | None:
    # the final norm is the shortest `*norm.weight` key (layer norms carry a layer prefix)
    hits = sorted((k for k in where if k.endswith(suffix) and ".layers." not in k), key=len)
    return hits[0] if hits else None


@dataclass
class FrozenTarget:
    embed: torch.Tensor  # [V, H]
    norm: torch.Tensor  # [H]
    lm_head: torch.Tensor  # [V, H]
    eps: float

    @classmethod
    def from_model_dir(cls, model_dir: Path, eps: float) -> FrozenTarget:
        from safetensors import safe_open

        model_dir = Path(model_dir)
        where = _weight_files(model_dir)
        names = {part: _find(where, suffix) for part, suffix in KEYS.items()}
        names["lm_head"] = names["lm_head"] or names["embed"]  # tied embeddings
        missing = [part for part, n in names.items() if n is None]
        if missing:
            raise DraftsetError(
                f"target {model_dir} has no {missing} weights in its safetensors",
                hint="point --model at the full Hugging Face model directory of the target",
            )
        out = {}
        for part, name in names.items():
            assert name is not None  # every missing name was refused above
            with safe_open(str(where[name]), framework="pt") as h:
                out[part] = h.get_tensor(name)
        return cls(eps=eps, **out)

    @classmethod
    def random(
        cls,
        vocab: int,
        hidden: int,
        eps: float = 1e-6,
        device: torch.device | str = "cpu",
        dtype: torch.dtype = torch.bfloat16,
    ) -> FrozenTarget:
        """Stand-in for benchmarks on synthetic hidden states (no target checkpoint on the GPU host)."""
        return cls(
            torch.randn(vocab, hidden, device=device, dtype=dtype) * 0.02,
            torch.ones(hidden, device=device, dtype=dtype),
            torch.randn(vocab, hidden, device=device, dtype=dtype) * 0.02,
            eps,
        )

    def to(self, device: torch.device | str, dtype: torch.dtype) -> FrozenTarget:
        embed, norm, lm_head = (t.to(device, dtype) for t in (self.embed, self.norm, self.lm_head))
        return FrozenTarget(embed, norm, lm_head, self.eps)

    def embed_tokens(self, ids: torch.Tensor) -> torch.Tensor:
        return F.embedding(ids, self.embed)

    def logits(self, last: torch.Tensor) -> torch.Tensor:
        """Target logits from the verifier's pre-norm state: lm_head(final_norm(last))."""
        normed = F.rms_norm(last.float(), (last.shape[-1],), self.norm.float(), self.eps)  # fp32 like HF
        return F.linear(normed.to(self.lm_head.dtype), self.lm_head)
