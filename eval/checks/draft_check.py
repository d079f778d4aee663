"""`draftset check draft`: does the draft predict the target, and only under the wiring it was trained on?

Per-step accuracy on training and held-out captures, the expected accept length from them, and the
same on training samples fed with plausible wrong wirings (ids shifted by one, embedding in or out,
order swapped, last layer instead of first). Wrong wirings need hidden states the capture does not
store (it stores exactly the configured taps), so they are recomputed with the target model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from catalog.errors import DraftsetError
from pipeline.capture.forward import target_states
from pipeline.capture.store import CaptureReader
from pipeline.stage import require
from pipeline.train.data import split_ids
from pipeline.train.draft_model import Eagle3Draft
from pipeline.train.export import load_exported
from pipeline.train.target_head import FrozenTarget
from pipeline.train.ttt import Batch, collate, expected_accept_length, step_accuracy

SMALL_MARGIN = 0.02  # accept-length gap under which the verdict warns that the taps barely matter


@dataclass
class WiringResult:
    name: str
    hf_ids: list[int]
    step_accuracy: list[float]
    accept_length: float


@dataclass
class DraftReport:
    configured: list[int]
    train: WiringResult
    heldout: WiringResult | None
    wirings: list[WiringResult] = field(default_factory=list)  # configured first, recomputed with the model
    target_dir: Path | None = None
    steps: int = 3  # speculation steps evaluated (as trained)
    n_samples: int = 0  # training samples the wirings were evaluated on

    @property
    def best_wrong(self) -> WiringResult | None:
        return max(self.wirings[1:], key=lambda w: w.accept_length, default=None)

    @property
    def configured_is_best(self) -> bool | None:
        return None if self.best_wrong is None else self.wirings[0].accept_length > self.best_wrong.accept_length

    def verdict(self) -> str:
        if self.best_wrong is None:
            return "wrong wirings not evaluated (give --model to recompute hidden states)"
        gap = self.wirings[0].accept_length - self.best_wrong.accept_length
        if gap > 0:
            verdict = (
                f"configured wiring {self.configured} is the best: accept length "
                f"{self.wirings[0].accept_length:.3f}, {gap:.3f} above the best wrong one ({self.best_wrong.name})"
            )
            if gap < SMALL_MARGIN:
                verdict += (
                    "; the margin is small: the draft leans on the token embedding more than on its taps, "
                    "so a wiring bug would cost little accuracy here and much on harder data"
                )
            return verdict
        return (
            f"WARNING: wrong wiring '{self.best_wrong.name}' {self.best_wrong.hf_ids} scores accept length "
            f"{self.best_wrong.accept_length:.3f} ≥ configured {self.wirings[0].accept_length:.3f}: the draft "
            f"does not depend on its taps; check capture and training"
        )


def wrong_wirings(ids: list[int], n_layers: int) -> list[tuple[str, list[int]]]:
    """Plausible miswirings of `ids` (HF indices; n = last block's pre-norm output)."""
    out = [
        ("shifted +1", [j + 1 for j in ids]),
        ("shifted -1", [j - 1 for j in ids]),
        ("order swapped", ids[::-1]),
        ("last layer instead of first", [n_layers] + ids[1:]),
    ]
    out.append(
        ("embedding missing", ids[1:] + [n_layers]) if ids[0] == 0 else ("embedding instead of last", [0] + ids[:-1])
    )
    return [(name, w) for name, w in out if all(0 <= j <= n_layers for j in w) and w != ids]


def _evaluate(
    draft: Eagle3Draft, target: FrozenTarget, batches: list[Batch], steps: int, name: str, ids: list[int]
) -> WiringResult:
    acc = step_accuracy(draft, target, batches, steps)
    return WiringResult(name, ids, acc, expected_accept_length(acc))


def _all_states(model: Any, sample: dict) -> list[torch.Tensor]:
    """Every HF hidden state of one sample (bf16-rounded like a capture), index n = pre-norm last state."""
    states, last = target_states(model, sample["input_ids"].long()[None])
    return [h[0].to(torch.bfloat16).float() for h in states[:-1]] + [last[0].to(torch.bfloat16).float()]


def check_draft(draft_dir: Path, captures: Path, model_dir: Path | None = None, max_samples: int = 64) -> DraftReport:
    draft, manifest, cfg = load_exported(draft_dir)
    if not Path(captures).exists():
        raise DraftsetError(f"captures {captures} not found", hint="pass --captures the capture dir of the build")
    steps = int(cfg.get("draftset", {}).get("ttt_steps", 3))  # as many steps as the draft was trained for
    target_dir = Path(model_dir or manifest.model_dir)
    target = FrozenTarget.from_model_dir(target_dir, manifest.rms_norm_eps).to("cpu", torch.float32)
    reader = CaptureReader(captures)
    require(
        bool(reader.ids()),
        f"no captured samples in {captures}",
        hint="pass --captures the capture dir the draft was trained on",
    )
    every = int(cfg.get("draftset", {}).get("heldout_every", 20))
    train_ids, held_ids = (ids[:max_samples] for ids in split_ids(reader, every))  # the split training used

    def stored(ids: list[str]) -> list[Batch]:
        return [collate([reader.load(i)]).to("cpu", torch.float32) for i in ids]

    ids = manifest.taps.aux
    report = DraftReport(
        ids,
        _evaluate(draft, target, stored(train_ids), steps, "configured (train)", ids),
        _evaluate(draft, target, stored(held_ids), steps, "configured (held-out)", ids) if held_ids else None,
        target_dir=target_dir,
        steps=steps,
        n_samples=len(train_ids),
    )
    if model_dir is None and not (target_dir / "config.json").exists():
        return report
    from pipeline.target.load import load_target

    model = load_target(target_dir, torch.float32)
    samples = [reader.load(i) for i in train_ids]
    states = [_all_states(model, s) for s in samples]
    for name, wiring in [("configured", ids)] + wrong_wirings(ids, manifest.n_layers):
        batches = [
            Batch(
                s["input_ids"].long()[None],
                s["loss_mask"].bool()[None],
                torch.cat([st[j] for j in wiring], -1)[None],
                st[manifest.n_layers][None],
            )
            for s, st in zip(samples, states)
        ]
        report.wirings.append(_evaluate(draft, target, batches, steps, name, wiring))
    return report
