"""The `draft_evals` catalog table: measured (specdecode) and estimated (check draft) accept lengths.

Each row carries its 95% interval, the draft's training sample count and its recipe (optimizer steps, tokens a
step), which makes measured rows the points of the data-and-recipe forecast (agents/forecast.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from catalog.errors import DraftsetError

if TYPE_CHECKING:
    from catalog import Catalog
    from eval.specdecode.evaluate import Measurement
    from eval.specdecode.replay import Interval


class EstimatedWiring(Protocol):
    """What a row of estimates reads of one wiring (eval.checks.draft_check.WiringResult has it): typed here
    so that this package needs nothing from eval/checks, which builds on it."""

    name: str
    hf_ids: list[int]
    accept_length: float
    step_accuracy: list[float]
    interval: Interval | None


def resolved(draft_dir: Path | str) -> dict | None:
    """The draft's training record (train/checkpoint/resolved.json: settings, shape, manifest, metrics), or None
    for a draft exported elsewhere. The one reader of it here: samples, recipe and row all come from it."""
    path = Path(draft_dir) / "train" / "checkpoint" / "resolved.json"
    return json.loads(path.read_text()) if path.exists() else None


def train_samples(draft_dir: Path | str) -> int | None:
    """Samples the draft trained on: its capture's (or online build's) samples less the held-out ones."""
    r = resolved(draft_dir)
    if r is None:
        return None  # a draft exported elsewhere: no forecast point, nothing else lost
    return int(r["capture_manifest"]["n_samples"]) - len(r.get("heldout_ids") or [])


def train_recipe(draft_dir: Path | str) -> tuple[int | None, int | None]:
    """(optimizer steps, tokens per step) the draft trained with, from its resolved.json; (None, None) without one."""
    r = resolved(draft_dir)
    if r is None:
        return None, None
    steps, batch = (r.get("metrics") or {}).get("steps"), (r.get("train") or {}).get("batch_tokens")
    return (int(steps) if steps is not None else None), (int(batch) if batch is not None else None)


def recipe_row(draft_dir: Path | str) -> str | None:
    """The recipe row the draft's settings came from (pipeline/train/recipes.py; None: every one given, or no
    record)."""
    r = resolved(draft_dir)
    return (r.get("train") or {}).get("recipe") if r is not None else None


def specdecode_rows(m: Measurement) -> list[dict]:
    """Rows for an eval.specdecode.evaluate.Measurement."""
    now = datetime.now()
    samples = train_samples(m.draft)
    train_steps, batch_tokens = train_recipe(m.draft)
    return [
        {
            "draft": m.draft,
            "target": m.target,
            "wiring": r.name,
            "method": "specdecode",
            "steps": r.steps,
            "hf_ids": r.hf_ids,
            "accept_length": r.accept_length,
            "step_acceptance": r.step_acceptance,
            "n_prompts": r.n_prompts,
            "n_tokens": r.n_tokens,
            "tokens_per_s": r.tokens_per_s,
            "baseline_tokens_per_s": m.greedy_tokens_per_s,
            "ties": r.ties,
            "device": m.device,
            "evaluated_at": now,
            "train_samples": samples,
            "train_steps": train_steps,
            "train_batch_tokens": batch_tokens,
            "al_low": r.interval.low,
            "al_high": r.interval.high,
        }
        for r in m.runs
    ]


def estimate_rows(
    wirings: Sequence[EstimatedWiring], draft_dir: Path, target_dir: Path, steps: int, n_samples: int
) -> list[dict]:
    """Rows for the wirings of an eval.checks.draft_check.DraftReport (recomputed with the target model)."""
    now = datetime.now()
    samples = train_samples(draft_dir)
    train_steps, batch_tokens = train_recipe(draft_dir)
    return [
        {
            "draft": str(Path(draft_dir).resolve()),
            "target": str(Path(target_dir).resolve()),
            "wiring": w.name,
            "method": "estimate",
            "steps": steps,
            "hf_ids": w.hf_ids,
            "accept_length": w.accept_length,
            "step_acceptance": w.step_accuracy,
            "n_prompts": n_samples,
            "n_tokens": None,
            "tokens_per_s": None,
            "baseline_tokens_per_s": None,
            "ties": None,
            "device": "cpu",
            "evaluated_at": now,
            "train_samples": samples,
            "train_steps": train_steps,
            "train_batch_tokens": batch_tokens,
            "al_low": w.interval.low if w.interval else None,
            "al_high": w.interval.high if w.interval else None,
        }
        for w in wirings
    ]


def save(catalog: Catalog | None, rows: list[dict]) -> None:
    if catalog is not None and rows:
        catalog.upsert("draft_evals", rows)


def load(catalog: Catalog | None, draft_dir: Path) -> list[dict]:
    """Every stored evaluation of this draft, measured first, by steps and wiring order of insertion."""
    if catalog is None:
        return []
    try:
        return catalog.query(
            "SELECT * FROM draft_evals WHERE draft = ? ORDER BY method DESC, steps, evaluated_at",
            [str(Path(draft_dir).resolve())],
        )
    except DraftsetError:
        return []  # no catalog yet: nothing was recorded
