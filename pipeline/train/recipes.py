"""Default training recipes keyed by the target's parameter count: what `train` should do when the user says nothing.

Rows (smallest first; the row with the largest `min_params` at or below the target's count applies):
- small (< 7B): measured on one H200, SmolLM2-135M-Instruct target, 27K rows, the same 16 held-out prompts
  (issue 29): 8,192 tokens a batch at lr 1e-3 for 4,368 steps gave AL 2.564 [2.465, 2.667] at 3 steps where
  32,768 tokens at lr 2e-3 for 724 steps gave 2.387 [2.291, 2.487]; short 16K-row runs (2026-12-03, held-out
  acc@0 after 300 steps) found constant lr above warm-up+cosine (0.490 vs 0.442). So: 8,192 tokens, lr 1e-3,
  constant after 200 warm-up steps, TTT 5, EAGLE-3.1's fc_norm and norm_output on, and enough epochs for
  >= 4,000 optimizer steps. Through the stages on 24K rows (2026-12-03, eval/bench/real_target_stages_notes.md)
  this row gave AL 2.260 at 3 steps and 2.559 at 5 after 3,782 steps; plain EAGLE-3 beside it 2.180 and 2.397.
  Levers on the same 24K rows at 1,000 steps (2026-12-03, eval/bench/real_target_capacity.json): a draft MLP twice
  the target's (`draft_intermediate_size`) +0.013 … +0.016 held-out accuracy, 16,384 tokens a batch +0.019 …
  +0.030 at equal time (0.82x the steps), lr 2e-3 equal, 5e-4 worse. Not taken into the row: 1,000 steps is a
  quarter of the row's floor, and neither was measured by decoding; the next full-length run compares them.
  Between 1B and 7B nothing was measured: the small row is the measured one.
- large (>= 7B): not measured here; SpecForge's llama3.1-8b online recipe (ttt_length 7, lr 1e-4;
  /work/shared/reference/eagle3-pipelines.md §1), with the same step floor.

Only settings the user did not give are filled (`resolve`), and the resolved config names the row applied.
`resolved_config` is the one place that applies it (the train stage calls it, so `draftset train`, `python -m
pipeline.train`, the service's train job and `check pilot` all get the same defaults): "given" is what the
TrainConfig was built with (`model_fields_set`), and the entry points leave a setting the user did not give out
of it (these fields are `inherited` settings: pipeline/stage/config.py). The target is sized from the folder the
stage reads its embedding and head from (--model, else the capture manifest's `model_dir`: offline training
sizes the target the capture was made with). A target that cannot be sized gets TrainConfig's plain defaults,
said in one line and recorded as `recipe: "defaults"`.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from catalog.errors import DraftsetError
from pipeline.train.config import TrainConfig
from pipeline.train.data import token_batches


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
    # ... but never more passes than this: on a small build the floor would ask for hundreds (the demo's toy build:
    # 364), which only memorise it. SpecForge's examples train 6-10 epochs; issue 29's 6.1-epoch run on 22.8K rows
    # already replays 2.79 on its train rows against 2.58 held out.
    max_epochs: int = 10


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
    """The target's parameter count, from its safetensors headers: the shards its index names when it has one
    (Mistral's repos ship `consolidated.safetensors` beside the HF shards, the same weights again), else every
    `*.safetensors` in the folder."""
    model_dir = Path(model_dir)
    indexes = sorted(model_dir.glob("*.safetensors.index.json"))
    if indexes:
        shards = {name for index in indexes for name in json.loads(index.read_text()).get("weight_map", {}).values()}
        files = sorted(model_dir / name for name in shards if (model_dir / name).is_file())
    else:
        files = sorted(model_dir.glob("*.safetensors"))
    if not files:
        raise DraftsetError(
            f"no *.safetensors in {model_dir}: cannot size the target for its default recipe",
            hint="give --epochs, --lr, --batch-tokens and --ttt-steps, or import the model to safetensors",
        )
    return sum(_safetensors_numel(f) for f in files)


def resolve(
    given: dict[str, Any], params: int, batches_per_epoch: Callable[[int], int]
) -> tuple[dict[str, Any], Recipe]:
    """(the settings with the recipe's values for every RECIPE_FIELDS key not in `given`, the row applied).
    `batches_per_epoch(batch_tokens)` counts one epoch's optimizer steps at that batch size, for the epochs.
    The row's warm-up, when filled, is at most a tenth of the run: a small build's 110 steps would otherwise end
    before the lr reached its peak (the 300-step levers of issue 29 warmed up for 30)."""
    recipe = recipe_for(params)
    values = dict(given)
    for name in RECIPE_FIELDS:
        if name not in values and name != "epochs":
            values[name] = getattr(recipe, name)
    per_epoch = int(batches_per_epoch(values["batch_tokens"]))
    if "epochs" not in values:
        values["epochs"] = epochs_for(recipe, per_epoch)
    if "warmup_steps" not in given:
        values["warmup_steps"] = min(recipe.warmup_steps, max(1, values["epochs"] * per_epoch // 10))
    return values, recipe


def epochs_for(recipe: Recipe, per_epoch: int) -> int:
    """The epochs that reach the row's `min_steps` at `per_epoch` optimizer steps an epoch (at least one, at most
    the row's `max_epochs`)."""
    return min(recipe.max_epochs, max(1, math.ceil(recipe.min_steps / max(per_epoch, 1))))


def steps_for_tokens(tokens: float) -> int | None:
    """The optimizer steps a default run would train on `tokens` training tokens when the target is not sized yet
    (find plans data before any target is read): every row's batch size and step floor, if they all agree, over
    ceil(tokens / batch_tokens) batches an epoch (an estimate: length batching pads a little); None when the rows
    differ in either (then the target's size decides, and it is not known here)."""
    if len({(r.batch_tokens, r.min_steps) for r in RECIPES}) != 1 or tokens <= 0:
        return None
    per_epoch = math.ceil(tokens / RECIPES[0].batch_tokens)
    return epochs_for(RECIPES[0], per_epoch) * per_epoch


def resolved_config(
    config: TrainConfig,
    target_dir: Path,
    batches_per_epoch: Callable[[int], int],
    interrupted: dict[str, Any] | None = None,
) -> tuple[TrainConfig, str]:
    """(the config with every RECIPE_FIELDS setting it was not given filled from the target's row, the line that
    says which defaults were used and why). A config already resolved, or given every recipe setting, is kept.
    `batches_per_epoch(batch_tokens)`: one epoch's optimizer steps at that batch size (this rank's, under DDP).
    `interrupted`: the resolved train settings of the run a `--resume` goes on with (its resolved.json): what it
    was not given now is what that run trained with, not today's row (a run begun before the table, or under
    another row, resumes as it began; a setting given that differs is refused by the resume's own check)."""
    if config.recipe is not None:
        return config, f"recipe {config.recipe} (resolved before)"
    given = {name: getattr(config, name) for name in RECIPE_FIELDS if name in config.model_fields_set}
    if len(given) == len(RECIPE_FIELDS):
        return config, "recipe: none applied (every recipe setting was given)"
    filled = [name for name in RECIPE_FIELDS if name not in given]
    if interrupted is not None and all(name in interrupted for name in filled):
        kept = {name: interrupted[name] for name in filled}
        as_before: dict[str, Any] = {
            **kept,
            "recipe": interrupted.get("recipe") or "resumed",  # "resumed": begun before the table named its row
            "recipe_source": interrupted.get("recipe_source") or "the interrupted run's settings",
            "recipe_filled": interrupted.get("recipe_filled") or filled,
            "target_parameters": interrupted.get("target_parameters"),
        }
        used = ", ".join(f"{name} {value}" for name, value in kept.items())
        return _with(config, as_before), f"recipe: as the interrupted run ({used})"
    try:
        params = target_parameters(target_dir)
    except (DraftsetError, OSError, ValueError, KeyError, struct.error) as exc:  # an unreadable header: unsized too
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        used = ", ".join(f"{name} {getattr(config, name)}" for name in filled)
        update: dict[str, Any] = {
            "recipe": "defaults",
            "recipe_source": f"target not sized: {why}",
            "recipe_filled": filled,
        }
        line = f"recipe: none (cannot size the target: {why}); plain defaults {used}; give them to choose"
        return _with(config, update), line
    values, recipe = resolve(given, params, batches_per_epoch)
    update = {
        **{name: values[name] for name in filled},
        "recipe": recipe.name,
        "recipe_source": recipe.source,
        "recipe_filled": filled,
        "target_parameters": params,
    }
    used = ", ".join(f"{name} {values[name]}" for name in filled)
    per_epoch = int(batches_per_epoch(values["batch_tokens"])) if "epochs" in filled else 0
    if "epochs" in filled and values["epochs"] * per_epoch < recipe.min_steps:  # the floor is out of this build's reach
        used += (
            f" (capped at {recipe.max_epochs} passes: {recipe.min_steps:,} steps would take "
            f"{math.ceil(recipe.min_steps / max(per_epoch, 1)):,} over {per_epoch:,} batches; more rows train more steps)"
        )
    return _with(config, update), f"recipe {recipe.name} for a {params:,}-parameter target ({recipe.source}): {used}"


def _with(config: TrainConfig, update: dict[str, Any]) -> TrainConfig:
    """The config with `update`, validated again (model_copy would skip the field checks)."""
    return TrainConfig.model_validate({**config.model_dump(), **update})


def planned_steps(config: TrainConfig, target_dir: Path, lengths: dict[str, int]) -> tuple[int, TrainConfig]:
    """(optimizer steps, the resolved config) of `config` trained in one process on rows of these token `lengths`:
    the resolved epochs x one epoch's batches, capped by max_steps. What a forecast of a run not made yet (a pilot's
    full build) assumes, by the same resolution the stage applies."""

    def per_epoch(batch_tokens: int) -> int:
        return len(token_batches(lengths, batch_tokens, config.seed, 0))

    resolved, _ = resolved_config(config, target_dir, per_epoch)
    steps = resolved.epochs * per_epoch(resolved.batch_tokens)
    return min(steps, resolved.max_steps or steps), resolved
