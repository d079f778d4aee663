"""`python -m pipeline.train CAPTURE OUT [--epochs N]`: train + export without the CLI (GPU hosts, torchrun)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.capture.runtime import exit_on_error
from pipeline.train.loop import TrainConfig, run_train


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m pipeline.train", description=__doc__)
    p.add_argument("capture_dir", type=Path)
    p.add_argument("out_dir", type=Path)
    p.add_argument("--model", type=Path, default=None)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--batch-tokens", type=int, default=8192)
    p.add_argument("--ttt-steps", type=int, default=7)
    a = p.parse_args()
    ckpt = run_train(TrainConfig(capture_dir=a.capture_dir, out_dir=a.out_dir, model_dir=a.model, epochs=a.epochs,
                                 lr=a.lr, batch_tokens=a.batch_tokens, ttt_steps=a.ttt_steps))
    print(f"checkpoint {ckpt}; exported draft {a.out_dir}")


if __name__ == "__main__":
    exit_on_error(main)
