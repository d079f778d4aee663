"""The capture stage's settings (light, no torch), each declared once as a `setting` or `derived`: the CLI and
`python -m pipeline.capture` build their flags and --config keys from it."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pipeline.stage import StageConfig
from pipeline.stage.config import derived, settable_fields, setting


# The fields a person sets (flags, --config, the service's capture job); the folders are given apart.
class CaptureConfig(StageConfig):
    build_dir: Path = derived(why="the input: a build folder")
    model_dir: Path = derived(why="the target model folder (Hugging Face layout), an argument of every entry")
    out_dir: Path = derived(why="--out, or $DRAFTSET_HOME/captures/<NAME>")
    layers: list[int] | None = setting(None, "aux taps as HF hidden-state indices (default: 2,n//2,n-3)")
    batch_tokens: int = setting(16384, "padded tokens per forward pass")
    # About one forward batch, so writes start early.
    shard_bytes: int = setting(1 << 28, "a shard closes past this many bytes")
    max_rows: int | None = setting(None, "capture only the first N rows")
    device: str = setting("auto", "auto | cpu | cuda:N")
    tp: bool = setting(
        False,
        "under torchrun: one target tensor-parallel across the ranks (transformers tp_plan), for targets larger "
        "than one GPU",
    )
    dtype: Literal["auto", "float32", "bfloat16"] = setting(
        "auto", "forward dtype: auto (bf16 on GPU, fp32 on CPU) | float32 | bfloat16"
    )
    writer_threads: int = setting(4, "threads writing shards")


# What a person may set (the CLI, --config and the service read it): derived from the declarations.
SETTABLE = tuple(settable_fields(CaptureConfig))
