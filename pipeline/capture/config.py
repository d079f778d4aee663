"""The capture stage's settings (light, no torch: the CLI and `python -m pipeline.capture` read them for their
flags and --config)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pipeline.stage import StageConfig

# The fields a person sets (flags, --config, the service's capture job); the folders are given apart.
SETTABLE = ("layers", "batch_tokens", "max_rows", "device", "tp", "shard_bytes", "dtype", "writer_threads")


class CaptureConfig(StageConfig):
    build_dir: Path
    model_dir: Path
    out_dir: Path
    layers: list[int] | None = None
    batch_tokens: int = 16384
    shard_bytes: int = 1 << 28  # a shard closes past this: about one forward batch, so writes start early
    max_rows: int | None = None
    device: str = "auto"
    tp: bool = False  # tensor-parallel target across the torchrun ranks (transformers tp_plan)
    dtype: Literal["auto", "float32", "bfloat16"] = (
        "auto"  # forward dtype: auto (bf16 on GPU, fp32 on CPU) | float32 | bfloat16
    )
    writer_threads: int = 4
