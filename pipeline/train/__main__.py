"""`python -m pipeline.train CAPTURE OUT [--epochs N] [--resume]` or `python -m pipeline.train BUILD OUT --online
--model TARGET`: train + export without the CLI (GPU hosts, torchrun)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.capture.runtime import exit_on_error
from pipeline.train.loop import TrainConfig, run_train


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m pipeline.train", description=__doc__)
    p.add_argument("input_dir", type=Path, help="capture dir (offline) or build dir (--online)")
    p.add_argument("out_dir", type=Path)
    p.add_argument("--model", type=Path, default=None)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--batch-tokens", type=int, default=8192)
    p.add_argument("--ttt-steps", type=int, default=7)
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--device", default="auto")
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--save-every", type=int, default=500, help="steps between resumable states")
    p.add_argument("--warmup-steps", type=int, default=0)
    p.add_argument("--resume", action="store_true", help="continue an interrupted run from its last state")
    p.add_argument("--online", action="store_true", help="taps from the target's forward (INPUT is a build)")
    p.add_argument("--layers", default=None, help="online: aux taps as HF hidden-state indices")
    p.add_argument("--tp", action="store_true", help="online under torchrun: one target tensor-parallel across ranks")
    a = p.parse_args()
    inputs = {"build_dir": a.input_dir, "capture_dir": None} if a.online else {"capture_dir": a.input_dir}
    ckpt = run_train(
        TrainConfig(
            **inputs,
            out_dir=a.out_dir,
            model_dir=a.model,
            epochs=a.epochs,
            lr=a.lr,
            batch_tokens=a.batch_tokens,
            ttt_steps=a.ttt_steps,
            max_steps=a.max_steps,
            log_every=a.log_every,
            save_every=a.save_every,
            warmup_steps=a.warmup_steps,
            resume=a.resume,
            online=a.online,
            device=a.device,
            tp=a.tp,
            layers=[int(x) for x in a.layers.split(",")] if a.layers else None,
        )
    )
    print(f"checkpoint {ckpt}; exported draft {a.out_dir}")


if __name__ == "__main__":
    exit_on_error(main)
