"""The train stage's settings (light, no torch): each field declared once, as a `setting` (flag, --config key,
help) or `derived` (the stage fills it); the CLI and `python -m pipeline.train` build their options from it."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import model_validator

from catalog.errors import DraftsetError
from pipeline.stage import StageConfig
from pipeline.stage.config import derived, settable_fields, setting

# Left out (no flag, --config key or service setting), these are the target's recipe's: the model's defaults below
# are only the fallback for a target that cannot be sized (pipeline/train/recipes.py `resolved_config`).
RECIPE = " (default: the target's recipe, pipeline/train/recipes.py)"

# The training-time-test attention's kernels (pipeline/train/ttt_attention.py KERNELS, held equal by a test).
TTTAttention = Literal["eager", "sdpa", "flex"]


# The fields a person sets (flags, --config, the service's train job); the folders are given apart.
class TrainConfig(StageConfig):
    capture_dir: Path | None = derived(why="the input (offline: a capture; online: None)")
    out_dir: Path = derived(why="--out, or $DRAFTSET_HOME/drafts/<NAME>")
    model_dir: Path | None = setting(
        None,
        "target dir for embedding/head (default: the capture manifest's); online: the target whose forward "
        "makes the taps",
        flag="--model",
    )
    epochs: int = setting(1, "passes over the data (default: enough for the recipe's minimum steps)", inherited=True)
    lr: float = setting(1e-4, "learning rate" + RECIPE, inherited=True)
    batch_tokens: int = setting(8192, "tokens per batch" + RECIPE, inherited=True)
    ttt_steps: int = setting(7, "training-time-test steps" + RECIPE, inherited=True)
    heldout_every: int = setting(20, "1 in N ids held out for evaluation")
    grad_clip: float = setting(0.5, "gradient norm clip")
    seed: int = setting(0, "seed")
    device: str = setting("auto", "auto | cpu | cuda:N")
    max_steps: int | None = setting(None, "stop after this many steps")
    # A time-boxed GPU lease: stop resumably after this long in the loop.
    max_seconds: float | None = setting(None, "stop resumably after this many seconds in the loop (--resume goes on)")
    log_every: int = setting(10, "steps between log lines")
    warmup_steps: int = setting(0, "linear warmup steps, then the schedule" + RECIPE, inherited=True)
    schedule: Literal["constant", "cosine"] = setting(
        "constant",
        "the lr after warm-up: constant, or cosine to zero at the last step (pipeline/train/schedule.py)" + RECIPE,
        inherited=True,
    )
    # Two flags each: the recipe turns them on, so a person needs a way to say off.
    fc_norm: bool = setting(
        False,
        "EAGLE-3.1: an RMSNorm on each tap before the fusion layer" + RECIPE,
        flag="--fc-norm/--no-fc-norm",
        inherited=True,
    )
    norm_output: bool = setting(
        False,
        "EAGLE-3.1: the post-norm state feeds the next draft step" + RECIPE,
        flag="--norm-output/--no-norm-output",
        inherited=True,
    )
    # A lever without a second build: the build keeps every target token's count beside its top K.
    draft_vocab_size: int | None = setting(
        None,
        "K: the draft's vocabulary (default: the build's); another K re-picks the K most frequent tokens "
        "from the build's token counts",
        ge=1,
    )
    # Engines size the draft's MLP from its own config.json (SGLang's and vLLM's llama_eagle3 read intermediate_size),
    # so a wider draft serves as any other: a capacity lever that costs the draft's step, not the target's.
    draft_intermediate_size: int | None = setting(
        None, "the draft layer's MLP width (default: the target's intermediate_size)", ge=1
    )
    draft_arch: Literal["auto", "llama", "mla"] = setting(
        "auto", "auto (an MLA draft for DeepSeek-V3/Kimi targets, Llama-style otherwise) | llama | mla"
    )
    # A kernel choice, not a model one: the same math and weights, so it is kept out of the exported config.json.
    # eager stays the default until a GPU measurement (eval/bench/bench_ttt_attention.py) says a fused one is faster.
    ttt_attention: TTTAttention = setting(
        "eager",
        "the training-time-test attention kernel: eager (the reference; an L x L score matrix a step) | sdpa "
        "(fused, a sink key carries the later steps' scores) | flex (flex_attention's lse merged with them; CUDA only)",
    )
    save_every: int = setting(500, "steps between resumable states (and every epoch end)")
    # A kill loses minutes, not the run.
    save_every_s: float = setting(300, "at most this many seconds between resumable states")
    resume: bool = setting(False, "continue an interrupted run from its last state")
    online: bool = setting(
        False, "run the target inside the training loop: no hidden-state files (the input is then a build)"
    )
    tp: bool = setting(
        False, "online under torchrun: one target tensor-parallel across the ranks (targets larger than one GPU)"
    )
    build_dir: Path | None = derived(None, why="the input when online")
    layers: list[int] | None = setting(None, "online: aux taps as HF hidden-state indices (default: 2,n//2,n-3)")
    # What filled the recipe settings left out (pipeline/train/recipes.py `resolved_config`), kept in resolved.json.
    recipe: str | None = derived(
        None,
        why="the recipe row applied (small | large), 'defaults' when the target could not be sized, 'resumed' when "
        "a --resume kept the settings of a run begun before the table, None when every recipe setting was given "
        "(or before the stage resolved them)",
    )
    recipe_source: str | None = derived(None, why="where the row's values come from, or why the defaults were used")
    recipe_filled: list[str] | None = derived(None, why="the settings the recipe filled (the rest were given)")
    target_parameters: int | None = derived(None, why="the target's parameter count the row was chosen by")

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


# What a person may set (the CLI, --config and the service read it): derived from the declarations.
SETTABLE = tuple(settable_fields(TrainConfig))
