"""`python -m pipeline.capture BUILD MODEL OUT [--layers 2,16,29] [--tp]`: capture without the CLI (GPU hosts,
torchrun; --tp loads one target tensor-parallel across the ranks)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.capture.config import CaptureConfig
from pipeline.capture.runtime import exit_on_error
from pipeline.stage import add_field_arguments, parsed_settings


def parser() -> argparse.ArgumentParser:
    """The entry point's arguments (the settings test reads them without running anything)."""
    p = argparse.ArgumentParser(prog="python -m pipeline.capture", description=__doc__)
    p.add_argument("build_dir", type=Path)
    p.add_argument("model_dir", type=Path)
    p.add_argument("out_dir", type=Path)
    add_field_arguments(p, CaptureConfig)  # every setting CaptureConfig declares, as it declares it
    p.add_argument("--fresh", action="store_true", help="discard what OUT already holds instead of resuming it")
    return p


def main() -> None:
    p = parser()
    a = p.parse_args()
    from pipeline.capture.run import run_capture  # torch: only once the arguments are good

    values = parsed_settings(a, CaptureConfig)
    m = run_capture(
        CaptureConfig(build_dir=a.build_dir, model_dir=a.model_dir, out_dir=a.out_dir, **values), fresh=a.fresh
    )
    print(f"captured {m.n_samples} samples, {m.n_tokens} tokens, {m.file_bytes / 1e6:.1f} MB → {a.out_dir}")


if __name__ == "__main__":
    exit_on_error(main)
