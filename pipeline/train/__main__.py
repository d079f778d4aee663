"""`python -m pipeline.train CAPTURE OUT [--epochs N] [--resume]` or `python -m pipeline.train BUILD OUT --online
--model TARGET`: train + export without the CLI (GPU hosts, torchrun)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.capture.runtime import exit_on_error
from pipeline.stage import add_field_arguments, parsed_settings
from pipeline.train.config import TrainConfig

FLAGS: dict[str, str | tuple[str, str]] = {
    "model_dir": ("--model", "target dir (offline: embedding/head, default the manifest's; online: the taps)"),
    "epochs": "passes over the data",
    "lr": "learning rate",
    "batch_tokens": "tokens per batch",
    "ttt_steps": "training-time-test steps",
    "max_steps": "stop after this many steps",
    "max_seconds": "stop (resumably) after this many seconds of training",
    "device": "auto | cpu | cuda:N",
    "log_every": "steps between log lines",
    "save_every": "steps between resumable states",
    "warmup_steps": "linear warmup steps",
    "heldout_every": "1 in N ids held out for evaluation",
    "grad_clip": "gradient norm clip",
    "seed": "seed",
    "resume": "continue an interrupted run from its last state",
    "online": "taps from the target's forward (INPUT is a build)",
    "layers": "online: aux taps as HF hidden-state indices",
    "tp": "online under torchrun: one target tensor-parallel across ranks",
    "draft_arch": "auto (MLA for DeepSeek-V3/Kimi targets, else Llama) | llama | mla",
}


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m pipeline.train", description=__doc__)
    p.add_argument("input_dir", type=Path, help="capture dir (offline) or build dir (--online)")
    p.add_argument("out_dir", type=Path)
    add_field_arguments(p, TrainConfig, FLAGS)
    a = p.parse_args()
    from pipeline.train.loop import run_train  # torch: only once the arguments are good

    values = parsed_settings(a, TrainConfig, FLAGS)
    inputs = {"build_dir": a.input_dir, "capture_dir": None} if values["online"] else {"capture_dir": a.input_dir}
    ckpt = run_train(TrainConfig(**inputs, out_dir=a.out_dir, **values))
    print(f"checkpoint {ckpt}; exported draft {a.out_dir}")


if __name__ == "__main__":
    exit_on_error(main)
