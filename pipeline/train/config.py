"""The train stage's settings (light, no torch: the CLI and `python -m pipeline.train` read them for their flags
and --config)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import model_validator

from catalog.errors import DraftsetError
from pipeline.stage import StageConfig

# The fields a person sets (flags, --config, the service's train job); the folders are given apart.
SETTABLE = (
    "model_dir",
    "online",
    "layers",
    "tp",
    "epochs",
    "lr",
    "batch_tokens",
    "ttt_steps",
    "max_steps",
    "max_seconds",
    "device",
    "fc_norm",
    "norm_output",
    "save_every",
    "resume",
    "heldout_every",
    "grad_clip",
    "seed",
    "log_every",
    "warmup_steps",
    "save_every_s",
    "schedule",
)


class TrainConfig(StageConfig):
    capture_dir: Path | None  # offline input; online: None
    out_dir: Path
    model_dir: Path | None = None  # target weights for embedding/head; default: the manifest's model_dir
    epochs: int = 1
    lr: float = 1e-4
    batch_tokens: int = 8192
    ttt_steps: int = 7
    heldout_every: int = 20
    grad_clip: float = 0.5
    seed: int = 0
    device: str = "auto"
    max_steps: int | None = None
    max_seconds: float | None = None  # stop resumably after this long in the loop (a time-boxed GPU lease)
    log_every: int = 10
    warmup_steps: int = 0  # linear warmup, then the schedule
    schedule: Literal["constant", "cosine"] = "constant"  # after warm-up (pipeline/train/schedule.py)
    fc_norm: bool = False  # EAGLE-3.1: per-tap RMSNorm before the fusion fc
    norm_output: bool = False  # EAGLE-3.1: the post-norm state feeds the next draft step
    save_every: int = 500  # steps between resumable states (and at every epoch end)
    save_every_s: float = 300  # and at most this long between them: a kill loses minutes, not the run
    resume: bool = False
    online: bool = False  # taps from the target's forward inside the loop (needs build_dir, model_dir)
    tp: bool = False  # online, under torchrun: one target tensor-parallel across the ranks
    build_dir: Path | None = None
    layers: list[int] | None = None  # online only: aux taps (default 2, n//2, n-3), as capture takes them

    @model_validator(mode="after")
    def _inputs(self) -> TrainConfig:
        if self.online and (self.build_dir is None or self.model_dir is None):
            raise DraftsetError(
                "online training needs a build and the target", hint="draftset train BUILD --online --model TARGET_DIR"
            )
        if self.tp and not self.online:
            raise DraftsetError(
                "--tp applies to online training (the target's forward)",
                hint="offline: capture with `draftset capture --tp`, then train data-parallel",
            )
        if not self.online and self.capture_dir is None:
            raise DraftsetError("offline training needs a capture", hint="draftset train CAPTURE (or --online)")
        return self
