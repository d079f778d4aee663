"""The learning-rate multiplier: linear warm-up, then constant or cosine decay to zero at the run's last step.

The issue-29 measurement (27K rows, SmolLM2-135M target) moved accept length mostly by optimizer steps and lr;
a cosine tail is the schedule SpecForge and speculators train EAGLE-3 drafts with, so both are offered."""

from __future__ import annotations

import math


def lr_factor(step: int, warmup: int, total: int | None, schedule: str) -> float:
    """Multiplier of the base lr at optimizer step `step` (0-based); `total` None means unknown (constant)."""
    if warmup and step < warmup:
        return (step + 1) / warmup
    if schedule == "constant" or not total or total <= warmup:
        return 1.0
    done = min(1.0, (step - warmup) / max(1, total - warmup))
    return 0.5 * (1.0 + math.cos(math.pi * done))
