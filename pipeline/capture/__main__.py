"""`python -m pipeline.capture BUILD MODEL OUT [--layers 2,16,29] [--tp]`: capture without the CLI (GPU hosts,
torchrun; --tp loads one target tensor-parallel across the ranks)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.capture.run import CaptureConfig, run_capture
from pipeline.capture.runtime import exit_on_error


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m pipeline.capture", description=__doc__)
    p.add_argument("build_dir", type=Path)
    p.add_argument("model_dir", type=Path)
    p.add_argument("out_dir", type=Path)
    p.add_argument("--layers", default=None, help="HF hidden-state indices, comma separated")
    p.add_argument("--batch-tokens", type=int, default=16384)
    p.add_argument("--max-rows", type=int, default=None)
    p.add_argument("--tp", action="store_true", help="one tensor-parallel target across the torchrun ranks")
    p.add_argument("--writer-threads", type=int, default=4)
    p.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16"], help="forward dtype")
    a = p.parse_args()
    layers = [int(x) for x in a.layers.split(",")] if a.layers else None
    m = run_capture(
        CaptureConfig(
            build_dir=a.build_dir,
            model_dir=a.model_dir,
            out_dir=a.out_dir,
            layers=layers,
            batch_tokens=a.batch_tokens,
            max_rows=a.max_rows,
            tp=a.tp,
            writer_threads=a.writer_threads,
            dtype=a.dtype,
        )
    )
    print(f"captured {m.n_samples} samples, {m.n_tokens} tokens, {m.file_bytes / 1e6:.1f} MB → {a.out_dir}")


if __name__ == "__main__":
    exit_on_error(main)
