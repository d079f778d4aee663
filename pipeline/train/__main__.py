"""`python -m pipeline.train CAPTURE OUT [--epochs N] [--resume]` or `python -m pipeline.train BUILD OUT --online
--model TARGET`: train + export without the CLI (GPU hosts, torchrun)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.capture.runtime import exit_on_error
from pipeline.stage import add_field_arguments, parsed_settings
from pipeline.train.config import TrainConfig


def parser() -> argparse.ArgumentParser:
    """The entry point's arguments (the settings test reads them without running anything)."""
    p = argparse.ArgumentParser(prog="python -m pipeline.train", description=__doc__)
    p.add_argument("input_dir", type=Path, help="capture dir (offline) or build dir (--online)")
    p.add_argument("out_dir", type=Path)
    add_field_arguments(p, TrainConfig)  # every setting TrainConfig declares, as it declares it
    return p


def main() -> None:
    p = parser()
    a = p.parse_args()
    from pipeline.train.loop import run_train  # torch: only once the arguments are good

    values = parsed_settings(a, TrainConfig)
    inputs = {"build_dir": a.input_dir, "capture_dir": None} if values["online"] else {"capture_dir": a.input_dir}
    ckpt = run_train(TrainConfig(**inputs, out_dir=a.out_dir, **values))
    print(f"checkpoint {ckpt}; exported draft {a.out_dir}")


if __name__ == "__main__":
    exit_on_error(main)
