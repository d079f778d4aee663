"""`draftset check accept-length`: accept length measured by speculative decoding, per wiring and step count.

Prompts are the held-out samples of the capture (or, for a draft trained online, the build) the draft
was trained on (the split training used), cut at their first trainable token, i.e. at the generation boundary of the serving chat template.
Plain greedy decoding gives the reference output and the baseline speed; then, for each step count
and for the configured wiring and every wrong one `check draft` knows, speculative decoding runs the
same prompts. Its output must equal the reference token for token; a difference is allowed only where
the reference's top two logits are within `TIE_MARGIN` (batched and one-token forwards round
differently), and is counted, never hidden.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import torch

from catalog.errors import DraftsetError
from eval.specdecode.decode import Decoded, greedy, speculative, step_acceptance
from eval.specdecode.replay import Interval, accept_length_interval, prompt_interval, separation
from eval.specdecode.runners import DraftRunner, TargetRunner
from eval.specdecode.samples import Samples, first_trainable
from eval.specdecode.wirings import wrong_wirings
from pipeline.model.runtime import single_thread
from pipeline.stage import require
from pipeline.train.draft_model import Eagle3Draft
from pipeline.train.export import load_exported

TIE_MARGIN = 1e-3


@dataclass
class WiringRun:
    name: str
    hf_ids: list[int]
    steps: int
    accept_length: float  # generated tokens per target forward, bonus token included
    step_acceptance: list[float]
    n_prompts: int
    n_tokens: int
    seconds: float
    ties: int  # prompts whose output left the reference at a numerical tie
    accepted: list[int] = field(default_factory=list)  # draft tokens accepted, per round
    per_prompt: list[list[int]] = field(default_factory=list)  # the same rounds, prompt by prompt

    @property
    def interval(self) -> Interval:
        """Over rounds: what wirings measured on the same prompts are compared by (their prompts are shared)."""
        return accept_length_interval(self.accepted)

    @property
    def prompt_interval(self) -> Interval | None:
        """Over prompts: what the figure says about prompts of this kind (wider; None below two prompts)."""
        return prompt_interval(self.per_prompt)

    @property
    def tokens_per_s(self) -> float:
        return self.n_tokens / self.seconds if self.seconds else 0.0


@dataclass
class Measurement:
    draft: str
    target: str
    device: str
    n_prompts: int
    greedy_tokens: int
    greedy_seconds: float
    runs: list[WiringRun] = field(default_factory=list)

    @property
    def greedy_tokens_per_s(self) -> float:
        return self.greedy_tokens / self.greedy_seconds if self.greedy_seconds else 0.0

    def separations(self) -> list[tuple[str, int, str]]:
        """(wrong wiring, steps, 'separated' or why not) against the configured wiring at the same steps."""
        first = {r.steps: r for r in self.runs if r.name == "configured"}
        return [
            (r.name, r.steps, separation(first[r.steps].interval, r.interval))
            for r in self.runs
            if r.name != "configured" and r.steps in first
        ]


def heldout_prompts(captures: Path, heldout_every: int, n: int) -> list[list[int]]:
    """Token prompts of up to n held-out samples (training samples only when nothing is held out)."""
    source = Samples(captures)
    train, held = source.split(heldout_every)
    prompts = []
    for sample_id in held or train:
        s = source.load(sample_id, with_states=False)
        boundary = first_trainable(s["loss_mask"])
        if boundary > 0:
            prompts.append(s["input_ids"][:boundary].long().tolist())
        if len(prompts) == n:
            break
    require(
        bool(prompts),
        f"no sample in {captures} has a prompt before its first trainable token",
        hint="build rows from chat data (the loss mask starts after the generation prompt)",
    )
    return prompts


def _agrees(spec: Decoded, ref: Decoded) -> bool:
    """True if equal; False at a numerical tie; raises on a real difference (a broken instrument)."""
    if spec.tokens == ref.tokens:
        return True
    first = next(
        (i for i, (a, b) in enumerate(zip(spec.tokens, ref.tokens)) if a != b), min(len(spec.tokens), len(ref.tokens))
    )
    if first < len(ref.margins) and ref.margins[first] < TIE_MARGIN:
        return False
    raise DraftsetError(
        f"speculative decoding left plain greedy output at token {first} "
        f"(greedy margin {ref.margins[min(first, len(ref.margins) - 1)]:.4f}): "
        "verification is broken",
        hint="report this with the draft and prompt",
    )


def _run(
    target: TargetRunner,
    draft: Eagle3Draft,
    name: str,
    ids: list[int],
    prompts: list[list[int]],
    refs: list[Decoded],
    steps: int,
    max_new: int,
    eos: int | None,
) -> WiringRun:
    runner = DraftRunner(draft, target.model.get_input_embeddings().weight, ids)
    decoded = [speculative(target, runner, p, max_new, eos, steps) for p in prompts]
    ties = sum(not _agrees(d, r) for d, r in zip(decoded, refs))
    accepted = [a for d in decoded for a in d.accepted]
    forwards = max(len(accepted), 1)
    return WiringRun(
        name,
        ids,
        steps,
        sum(a + 1 for a in accepted) / forwards,
        step_acceptance(accepted, steps),
        len(prompts),
        sum(len(d.tokens) for d in decoded),
        sum(d.seconds for d in decoded),
        ties,
        accepted,
        [d.accepted for d in decoded],
    )


def measure(
    draft_dir: Path,
    captures: Path,
    model_dir: Path | None = None,
    steps: list[int] | None = None,
    n_prompts: int = 16,
    max_new: int = 64,
    with_wrong: bool = True,
    device: str = "auto",
    dtype: str = "float32",
    wrong_steps: list[int] | None = None,
) -> Measurement:
    """Plain greedy, then speculative decoding per step count and wiring; wrong wirings at `wrong_steps`
    only (default: every step count), since each costs a full decode of the prompts."""
    from pipeline.capture.runtime import pick_device
    from pipeline.targets.load import load_target

    draft, manifest, cfg = load_exported(draft_dir)
    steps = steps or [int(cfg.get("draftset", {}).get("ttt_steps", 3))]
    target_dir = Path(model_dir or manifest.model_dir)
    dev = pick_device(device)
    torch_dtype = getattr(torch, dtype)
    model = load_target(target_dir, torch_dtype).to(dev)
    require(
        int(model.config.num_hidden_layers) == manifest.n_layers,
        f"target {target_dir} has {model.config.num_hidden_layers} layers, the draft's capture {manifest.n_layers}",
        hint="pass --model the target the draft was trained for",
    )
    draft = draft.to(dev, torch_dtype)
    target = TargetRunner(model)
    eos = model.generation_config.eos_token_id
    eos = eos[0] if isinstance(eos, list) else eos
    prompts = [p for p in heldout_prompts(captures, int(cfg.get("draftset", {}).get("heldout_every", 20)), n_prompts)]
    wirings = [("configured", manifest.taps.aux)]
    if with_wrong:
        wirings += wrong_wirings(manifest.taps.aux, manifest.n_layers)
    # CPU: one intra-op thread. Batch-1 decoding gains little from a second one, and OpenMP spin-waiting on
    # shared cores made a toy measurement 50x slower (pipeline/model/runtime.py has the figures).
    with single_thread() if dev.type == "cpu" else nullcontext():
        greedy(target, prompts[0], 4, eos)  # warm-up: first-call allocations stay out of the timings
        refs = [greedy(target, p, max_new, eos) for p in prompts]
        result = Measurement(
            str(Path(draft_dir).resolve()),
            str(target_dir.resolve()),
            str(dev),
            len(prompts),
            sum(len(r.tokens) for r in refs),
            sum(r.seconds for r in refs),
        )
        for k in steps:
            for name, ids in wirings if wrong_steps is None or k in wrong_steps else wirings[:1]:
                result.runs.append(_run(target, draft, name, ids, prompts, refs, k, max_new, eos))
    return result
