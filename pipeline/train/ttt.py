"""EAGLE-3 training-time test: the draft's objective over several speculation steps.

Alignment (speculators/SpecForge convention, one-token shift made explicit): at step k, position t
  input token  x[t+k+1]            (embedded with the target's frozen embedding)
  fused state  fc(aux[t]) at k=0,  the draft's own step k-1 output afterwards
  target       the target's next-token distribution at position t+k+1 (it predicts token t+k+2)
  counted iff  loss_mask[t+k+2] == 1 (that predicted token is trainable) and it lies inside the row.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import torch
from torch.nn import functional as F

if TYPE_CHECKING:
    from pipeline.train.draft_model import Eagle3Draft
    from pipeline.train.target_head import FrozenTarget

STEP_DECAY = 0.8  # later steps weigh less, as in the EAGLE-3 reference trainer


@dataclass
class Batch:
    input_ids: torch.Tensor  # [B, L] long, right-padded with 0
    loss_mask: torch.Tensor  # [B, L] bool (False on padding)
    aux: torch.Tensor  # [B, L, n_aux*H]
    last: torch.Tensor  # [B, L, H]

    def to(self, device: torch.device | str, dtype: torch.dtype) -> Batch:
        return Batch(
            self.input_ids.to(device),
            self.loss_mask.to(device),
            self.aux.to(device, dtype),
            self.last.to(device, dtype),
        )


@dataclass
class StepStats:
    loss: torch.Tensor  # scalar, differentiable
    correct: torch.Tensor  # scalar count (a tensor: no device sync inside the step loop)
    count: torch.Tensor
    hits: torch.Tensor | None = None  # [B, L] bool: right and counted, per position (eval replays decoding on it)


def collate(samples: list[dict]) -> Batch:
    width = max(int(s["input_ids"].numel()) for s in samples)
    b = len(samples)
    ids = torch.zeros(b, width, dtype=torch.long)
    mask = torch.zeros(b, width, dtype=torch.bool)
    aux = torch.zeros(b, width, samples[0]["aux"].shape[-1], dtype=samples[0]["aux"].dtype)
    last = torch.zeros(b, width, samples[0]["last"].shape[-1], dtype=samples[0]["last"].dtype)
    for i, s in enumerate(samples):
        n = int(s["input_ids"].numel())
        ids[i, :n] = s["input_ids"].long()
        mask[i, :n] = s["loss_mask"].bool()
        aux[i, :n], last[i, :n] = s["aux"], s["last"]
    return Batch(ids, mask, aux, last)


def _shift(x: torch.Tensor, s: int) -> torch.Tensor:
    """x[:, t+s] at position t; zero (False) past the end."""
    out = torch.zeros_like(x)
    if s < x.shape[1]:
        out[:, : x.shape[1] - s] = x[:, s:]
    return out


def ttt_steps(draft: Eagle3Draft, target: FrozenTarget, batch: Batch, steps: int) -> list[StepStats]:
    """Run `steps` speculation steps; per step the masked soft cross-entropy and argmax accuracy."""
    with torch.no_grad():
        tlogits = target.logits(batch.last)  # [B, L, V]
        target_tok = tlogits.argmax(-1)  # [B, L]
        hot = torch.arange(draft.d2t.numel(), device=draft.d2t.device)
        target_p = torch.softmax(tlogits[..., draft.to_target_ids(hot)].float(), -1)  # over the draft vocab
        del tlogits
    n = batch.input_ids.shape[1]
    hidden = draft.fuse(batch.aux)
    cache: list = []
    stats = []
    for k in range(steps):
        pos = torch.arange(n, device=hidden.device) + k
        logits, hidden = draft.step(target.embed_tokens(_shift(batch.input_ids, k + 1)), hidden, pos, cache)
        tok = _shift(target_tok, k + 1)
        counted = _shift(batch.loss_mask, k + 2)
        trainable = counted & draft.t2d[tok]  # a target token outside the draft vocab has no label
        ce = -(_shift(target_p, k + 1) * F.log_softmax(logits.float(), -1)).sum(-1)
        loss = (ce * trainable).sum() / trainable.sum().clamp(min=1)
        with torch.no_grad():
            correct = (draft.to_target_ids(logits.argmax(-1)) == tok) & counted
        stats.append(StepStats(loss, correct.sum(), counted.sum(), correct))
    return stats


class TTTObjective(torch.nn.Module):
    """The objective as a module, so DDP can wrap it (its forward is what triggers gradient sync)."""

    def __init__(self, draft: Eagle3Draft):
        super().__init__()
        self.draft = draft

    def forward(self, target: FrozenTarget, batch: Batch, steps: int) -> list[StepStats]:
        return ttt_steps(self.draft, target, batch, steps)


def total_loss(stats: list[StepStats]) -> torch.Tensor:
    return cast(torch.Tensor, sum(STEP_DECAY**k * s.loss for k, s in enumerate(stats)))


def step_accuracy(draft: Eagle3Draft, target: FrozenTarget, batches: Iterable[Batch], steps: int) -> list[float]:
    """Per-step accuracy over batches: draft argmax == target argmax on the counted positions."""
    correct, count = [0] * steps, [0] * steps
    with torch.no_grad():
        for batch in batches:
            for k, s in enumerate(ttt_steps(draft, target, batch, steps)):
                correct[k] += int(s.correct)
                count[k] += int(s.count)
    return [c / max(n, 1) for c, n in zip(correct, count)]


def expected_accept_length(acc: list[float]) -> float:
    """Chain (topk 1) accept length from per-step accuracies: 1 + Σ_k Π_{i≤k} a_i.

    Treats step accuracies as conditional acceptance rates; the bonus token from the target makes the 1.
    """
    total, run = 1.0, 1.0
    for a in acc:
        run *= a
        total += run
    return total
