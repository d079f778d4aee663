"""`draftset check draft`: does the draft predict the target, and only under the wiring it was trained on?

Per-step accuracy on held-out rows (the headline) and training rows, and the accept length a chain
decode would measure there, replayed on the teacher-forced rows (eval/specdecode/replay.py) with a
bootstrap interval; the same under plausible wrong wirings (ids shifted by one, embedding in or out,
order swapped, last layer instead of first), whose hidden states the capture does not store (it stores
exactly the configured taps), so they are recomputed with the target model. A draft trained online has
no capture: give its build, and every state is recomputed.

The replay is exact when the rows are the target's own greedy output (`follows` = 1); below
FOLLOWS_EXACT the estimate says it cannot stand in for `check accept-length`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from catalog.errors import DraftsetError
from eval.specdecode.replay import Interval, accept_length_interval, prompt_interval, separation, walk
from eval.specdecode.samples import Samples, first_trainable
from eval.specdecode.wirings import wrong_wirings
from pipeline.capture.forward import target_states
from pipeline.train.draft_model import Eagle3Draft
from pipeline.train.export import load_exported
from pipeline.train.target_head import FrozenTarget
from pipeline.train.ttt import Batch, collate, expected_accept_length, ttt_steps

SMALL_MARGIN = 0.02  # accept-length gap under which the verdict warns that the taps barely matter
FOLLOWS_EXACT = 0.98  # share of row tokens equal to the target's argmax above which the replay is exact
DEFAULT_MAX_NEW = 64  # tokens a replayed decode makes per prompt: `check accept-length`'s default


@dataclass
class WiringResult:
    name: str
    hf_ids: list[int]
    step_accuracy: list[float]  # teacher-forced, every counted position once
    accept_length: float  # the replayed decode's (what `check accept-length` would measure)
    interval: Interval | None = None
    step_acceptance: list[float] = field(default_factory=list)  # replayed: per round that reached the step
    independent_al: float = 0.0  # 1 + Σ Π accuracy: treats positions as independent (biased high)
    follows: float = 1.0  # share of counted row tokens that are the target's own argmax
    rounds: list[int] = field(default_factory=list)
    by_steps: dict[int, Interval] = field(default_factory=dict)  # the replayed decode at 1..steps steps
    per_prompt: list[list[int]] = field(default_factory=list)  # the same rounds, row by row (in the rows' order)

    @property
    def prompt_interval(self) -> Interval | None:
        """Over rows (prompts): as `check accept-length` gives it beside the interval over rounds."""
        return prompt_interval(self.per_prompt)

    @property
    def exact(self) -> bool:
        return self.follows >= FOLLOWS_EXACT


@dataclass
class DraftReport:
    configured: list[int]
    train: WiringResult
    heldout: WiringResult | None
    wirings: list[WiringResult] = field(default_factory=list)  # configured first, recomputed with the model
    target_dir: Path | None = None
    steps: int = 3  # speculation steps evaluated (as trained)
    n_samples: int = 0  # samples the wirings were evaluated on
    wirings_on: str = "training"  # which rows the wirings were evaluated on
    max_new: int | None = DEFAULT_MAX_NEW

    @property
    def headline(self) -> WiringResult:
        return self.heldout or self.train

    @property
    def best_wrong(self) -> WiringResult | None:
        return max(self.wirings[1:], key=lambda w: w.accept_length, default=None)

    @property
    def configured_is_best(self) -> bool | None:
        return None if self.best_wrong is None else self.wirings[0].accept_length > self.best_wrong.accept_length

    def separations(self) -> list[tuple[str, str]]:
        """(wrong wiring, 'separated' or why not) against the configured one, by their intervals."""
        first = self.wirings[0].interval if self.wirings else None
        return [(w.name, separation(first, w.interval)) for w in self.wirings[1:] if first and w.interval]

    def trust(self) -> str:
        """Whether the headline estimate can stand in for a measurement."""
        h = self.headline
        if not h.exact:
            return (
                f"estimate is approximate: only {h.follows:.0%} of row tokens are the target's own greedy choice, so "
                "a decode leaves these rows; measure it: draftset check accept-length"
            )
        return f"estimate replays decoding on {h.follows:.1%}-greedy rows: it stands in for check accept-length"

    def verdict(self) -> str:
        if self.best_wrong is None:
            return "wrong wirings not evaluated (give --model to recompute hidden states)"
        gap = self.wirings[0].accept_length - self.best_wrong.accept_length
        unseparated = [name for name, line in self.separations() if line != "separated"]
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
            if unseparated:
                verdict += f"; not separated at this sample size from: {', '.join(unseparated)}"
            return verdict
        return (
            f"WARNING: wrong wiring '{self.best_wrong.name}' {self.best_wrong.hf_ids} scores accept length "
            f"{self.best_wrong.accept_length:.3f} ≥ configured {self.wirings[0].accept_length:.3f}: the draft "
            f"does not depend on its taps; check capture and training"
        )


def evaluate(
    draft: Eagle3Draft,
    target: FrozenTarget,
    batches: list[Batch],
    steps: int,
    name: str,
    ids: list[int],
    max_new: int | None = DEFAULT_MAX_NEW,
) -> WiringResult:
    """Teacher-forced accuracy per step, and the decode replayed on each row (one row per batch)."""
    correct, count = [0] * steps, [0] * steps
    rounds: list[int] = []
    per_row: list[list[int]] = []
    fewer: dict[int, list[int]] = {k: [] for k in range(1, steps)}  # a decode of k < steps: the same hits, cut
    agree = counted = 0
    with torch.no_grad():
        for batch in batches:
            stats = ttt_steps(draft, target, batch, steps)
            for k, s in enumerate(stats):
                correct[k] += int(s.correct)
                count[k] += int(s.count)
            row_ids, mask = batch.input_ids[0], batch.loss_mask[0]
            greedy = target.logits(batch.last[0]).argmax(-1)  # the target's next token at each position
            trainable = mask[1:]
            agree += int((greedy[:-1] == row_ids[1:])[trainable].sum())
            counted += int(trainable.sum())
            start = first_trainable(mask) - 1
            if start >= 0:
                hits = [s.hits[0] for s in stats if s.hits is not None]
                per_row.append(walk(hits, start, len(row_ids) - 1, max_new))
                rounds += per_row[-1]
                for k, walked in fewer.items():
                    walked += walk(hits[:k], start, len(row_ids) - 1, max_new)
    acc = [c / max(n, 1) for c, n in zip(correct, count)]
    interval = accept_length_interval(rounds)
    reached = [sum(1 for a in rounds if a >= k) for k in range(steps)]
    acceptance = [sum(1 for a in rounds if a > k) / r if r else 0.0 for k, r in enumerate(reached)]
    return WiringResult(
        name,
        ids,
        acc,
        interval.value,
        interval,
        acceptance,
        expected_accept_length(acc),
        agree / max(counted, 1),
        rounds,
        {**{k: accept_length_interval(r) for k, r in fewer.items()}, steps: interval},
        per_row,
    )


def _all_states(model: Any, sample: dict) -> list[torch.Tensor]:
    """Every HF hidden state of one sample (bf16-rounded like a capture), index n = pre-norm last state."""
    states, last = target_states(model, sample["input_ids"].long()[None])
    return [h[0].to(torch.bfloat16).float() for h in states[:-1]] + [last[0].to(torch.bfloat16).float()]


def _wired(sample: dict, states: list[torch.Tensor], wiring: list[int], n_layers: int) -> Batch:
    return Batch(
        sample["input_ids"].long()[None],
        sample["loss_mask"].bool()[None],
        torch.cat([states[j] for j in wiring], -1)[None],
        states[n_layers][None],
    )


def check_draft(
    draft_dir: Path,
    captures: Path,
    model_dir: Path | None = None,
    max_samples: int = 64,
    max_new: int | None = DEFAULT_MAX_NEW,
) -> DraftReport:
    draft, manifest, cfg = load_exported(draft_dir)
    if not Path(captures).exists():
        raise DraftsetError(f"captures {captures} not found", hint="pass --captures the capture dir of the build")
    steps = int(cfg.get("draftset", {}).get("ttt_steps", 3))  # as many steps as the draft was trained for
    target_dir = Path(model_dir or manifest.model_dir)
    target = FrozenTarget.from_model_dir(target_dir, manifest.rms_norm_eps).to("cpu", torch.float32)
    source = Samples(Path(captures), manifest.vocab_size)
    every = int(cfg.get("draftset", {}).get("heldout_every", 20))
    train_ids, held_ids = (ids[:max_samples] for ids in source.split(every))  # the split training used
    ids = manifest.taps.aux
    have_model = model_dir is not None or (target_dir / "config.json").exists()
    if not source.has_states and not have_model:
        raise DraftsetError(
            f"{captures} is a build (no stored taps) and the target {target_dir} is not here",
            hint="pass --model TARGET_DIR: the taps are recomputed with it",
        )
    model = None
    if have_model:
        from pipeline.targets.load import load_target

        model = load_target(target_dir, torch.float32)
    cache: dict[str, tuple[dict, list[torch.Tensor]]] = {}

    def states_of(i: str) -> tuple[dict, list[torch.Tensor]]:
        if i not in cache:
            sample = source.load(i, with_states=False)
            cache[i] = (sample, _all_states(model, sample))
        return cache[i]

    def configured(rows: list[str]) -> list[Batch]:
        if source.has_states:
            return [collate([source.load(i)]).to("cpu", torch.float32) for i in rows]
        return [_wired(*states_of(i), ids, manifest.n_layers) for i in rows]

    def result(rows: list[str], name: str) -> WiringResult:
        return evaluate(draft, target, configured(rows), steps, name, ids, max_new)

    report = DraftReport(
        ids,
        result(train_ids, "configured (train)"),
        result(held_ids, "configured (held-out)") if held_ids else None,
        target_dir=target_dir,
        steps=steps,
        max_new=max_new,
    )
    if model is None:
        return report
    rows = held_ids or train_ids  # wirings on held-out rows where there are any: the headline's rows
    report.n_samples, report.wirings_on = len(rows), "held-out" if held_ids else "training"
    for name, wiring in [("configured", ids)] + wrong_wirings(ids, manifest.n_layers):
        batches = [_wired(*states_of(i), wiring, manifest.n_layers) for i in rows]
        report.wirings.append(evaluate(draft, target, batches, steps, name, wiring, max_new))
    return report
