"""`python -m pipeline.capture BUILD MODEL OUT [--layers 2,16,29] [--tp]`: capture without the CLI (GPU hosts,
torchrun; --tp loads one target tensor-parallel across the ranks)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.capture.config import CaptureConfig
from pipeline.capture.runtime import exit_on_error
from pipeline.stage import add_field_arguments, parsed_settings

FLAGS: dict[str, str | tuple[str, str]] = {
    "layers": "HF hidden-state indices, comma separated",
    "batch_tokens": "padded tokens per forward pass",
    "max_rows": "capture only the first N rows",
    "tp": "one tensor-parallel target across the torchrun ranks",
    "writer_threads": "threads writing shards",
    "dtype": "forward dtype: auto | float32 | bfloat16",
    "device": "auto | cpu | cuda:N",
    "shard_bytes": "a shard closes past this many bytes",
}


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m pipeline.capture", description=__doc__)
    p.add_argument("build_dir", type=Path)
    p.add_argument("model_dir", type=Path)
    p.add_argument("out_dir", type=Path)
    add_field_arguments(p, CaptureConfig, FLAGS)
    p.add_argument("--fresh", action="store_true", help="discard what OUT already holds instead of resuming it")
    a = p.parse_args()
    from pipeline.capture.run import run_capture  # torch: only once the arguments are good

    values = parsed_settings(a, CaptureConfig, FLAGS)
    m = run_capture(
        CaptureConfig(build_dir=a.build_dir, model_dir=a.model_dir, out_dir=a.out_dir, **values), fresh=a.fresh
    )
    print(f"captured {m.n_samples} samples, {m.n_tokens} tokens, {m.file_bytes / 1e6:.1f} MB → {a.out_dir}")


if __name__ == "__main__":
    exit_on_error(main)
