"""Default training recipes keyed by the target's parameter count: what `train` should do when the user says nothing.

Rows (smallest first; the row with the largest `min_params` at or below the target's count applies):
- small (< 7B): measured on one H200, SmolLM2-135M-Instruct target, 27K rows, the same 16 held-out prompts
  (issue 29): 8,192 tokens a batch at lr 1e-3 for 4,368 steps gave AL 2.564 [2.465, 2.667] at 3 steps where
  32,768 tokens at lr 2e-3 for 724 steps gave 2.387 [2.291, 2.487]; short 16K-row runs (2026-12-03, held-out
  acc@0 after 300 steps) found constant lr above warm-up+cosine (0.490 vs 0.442). So: 8,192 tokens, lr 1e-3,
  constant after 200 warm-up steps, TTT 5, EAGLE-3.1's fc_norm and norm_output on, and enough epochs for
  >= 4,000 optimizer steps. Between 1B and 7B nothing was measured: the small row is the measured one.
- large (>= 7B): not measured here; SpecForge's llama3.1-8b online recipe (ttt_length 7, lr 1e-4;
  /work/shared/reference/eagle3-pipelines.md §1), with the same step floor.

Only settings the user did not give are filled (`resolve`), and the resolved config names the row applied.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from catalog.errors import DraftsetError


@dataclass(frozen=True)
class Recipe:
    name: str
    min_params: int  # the row applies to targets with at least this many parameters
    batch_tokens: int
    lr: float
    warmup_steps: int
    schedule: Literal["constant", "cosine"]
    ttt_steps: int
    fc_norm: bool
    norm_output: bool
    min_steps: int  # epochs are chosen so the run trains at least this many optimizer steps
    source: str


RECIPES = (
    Recipe("small", 0, 8192, 1e-3, 200, "constant", 5, True, True, 4000, "measured: issue 29, SmolLM2-135M on H200"),
    Recipe(
        "large", 7 * 10**9, 8192, 1e-4, 200, "constant", 7, True, True, 4000,
        "SpecForge llama3.1-8b-eagle3-online (shared/reference/eagle3-pipelines.md)",
    ),
)  # fmt: skip

# The TrainConfig fields a recipe fills when the user left them out.
RECIPE_FIELDS = ("batch_tokens", "lr", "warmup_steps", "schedule", "ttt_steps", "fc_norm", "norm_output", "epochs")


def recipe_for(params: int) -> Recipe:
    """The row for a target of `params` parameters."""
    return max((r for r in RECIPES if r.min_params <= params), key=lambda r: r.min_params)


def _safetensors_numel(path: Path) -> int:
    """Parameters in one safetensors file, from its header alone (8-byte length, then JSON): no weights read."""
    with path.open("rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    return sum(math.prod(v["shape"]) for k, v in header.items() if k != "__metadata__")


def target_parameters(model_dir: Path) -> int:
    """The target's parameter count, from its safetensors headers."""
    files = sorted(Path(model_dir).glob("*.safetensors"))
    if not files:
        raise DraftsetError(
            f"no *.safetensors in {model_dir}: cannot size the target for its default recipe",
            hint="give --epochs, --lr, --batch-tokens and --ttt-steps, or import the model to safetensors",
        )
    return sum(_safetensors_numel(f) for f in files)


def resolve(given: dict[str, Any], params: int, batches_per_epoch: Any) -> tuple[dict[str, Any], Recipe]:
    """(the settings with the recipe's values for every RECIPE_FIELDS key not in `given`, the row applied).
    `batches_per_epoch(batch_tokens)` counts one epoch's optimizer steps at that batch size, for the epochs."""
    recipe = recipe_for(params)
    values = dict(given)
    for name in RECIPE_FIELDS:
        if name not in values and name != "epochs":
            values[name] = getattr(recipe, name)
    if "epochs" not in values:
        per_epoch = max(int(batches_per_epoch(values["batch_tokens"])), 1)
        values["epochs"] = max(1, math.ceil(recipe.min_steps / per_epoch))
    return values, recipe
