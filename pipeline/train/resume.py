"""Mid-epoch resume of training: one atomic file with everything a restarted run needs.

Saved every `save_every` steps and at each epoch's end: draft weights, optimizer and scheduler state,
the RNG states, the step, and the position (epoch, next batch index) in the seeded batch order. A run
started with `--resume` continues from the next batch, so no batch is trained twice or skipped; the
training log is cut back to the saved step, so it lists exactly the batches that shaped the weights.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from torch.optim import Optimizer
from torch.optim.lr_scheduler import LRScheduler

from catalog.errors import DraftsetError
from catalog.io import atomic_path

STATE = "trainer_state.pt"
# Settings that decide which batches exist and in which order: resuming under other values would
# train a different sequence than the one the state was saved in.
ORDER_KEYS = ("batch_tokens", "seed", "heldout_every", "ttt_steps", "online", "capture_dir", "build_dir", "draft_arch")
# Keys added after states were first written, with the value a state saved before them was trained under.
LATER_KEYS = {"draft_arch": "auto"}


@dataclass
class Position:
    step: int = 0
    epoch: int = 0
    next_batch: int = 0  # index into this rank's batches of `epoch`


def rng_state() -> dict:
    state = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_state(path: Path, draft: nn.Module, opt: Optimizer, sched: LRScheduler, pos: Position, config: dict) -> None:
    """Everything in one file, renamed into place: a kill mid-write leaves the previous state intact."""
    payload = {
        "draft": {k: v.detach().cpu() for k, v in draft.state_dict().items()},
        "opt": opt.state_dict(),
        "sched": sched.state_dict(),
        "rng": rng_state(),
        "step": pos.step,
        "epoch": pos.epoch,
        "next_batch": pos.next_batch,
        "order": {k: str(config.get(k)) for k in ORDER_KEYS},
    }
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)


def load_state(path: Path, draft: nn.Module, opt: Optimizer, sched: LRScheduler, config: dict) -> Position:
    if not path.exists():
        raise DraftsetError(
            f"nothing to resume: no {path.name} in {path.parent}",
            hint="run without --resume to start training from scratch",
        )
    payload = torch.load(path, map_location="cpu", weights_only=False)  # our own file, written by save_state
    saved = {**LATER_KEYS, **payload["order"]}
    changed = [k for k in ORDER_KEYS if saved.get(k) != str(config.get(k))]
    if changed:
        raise DraftsetError(
            f"cannot resume: {', '.join(changed)} differ from the interrupted run",
            hint="resume with the same settings, or start afresh without --resume",
        )
    draft.load_state_dict(payload["draft"])
    opt.load_state_dict(payload["opt"])
    sched.load_state_dict(payload["sched"])
    set_rng_state(payload["rng"])
    return Position(payload["step"], payload["epoch"], payload["next_batch"])


def cut_log(path: Path, step: int) -> None:
    """Drop log lines written after the saved step (those batches are trained again after resuming)."""
    if not path.exists():
        return
    keep = [line for line in path.read_text().splitlines() if line and json.loads(line)["step"] <= step]
    with atomic_path(path) as tmp:
        tmp.write_text("".join(line + "\n" for line in keep))
